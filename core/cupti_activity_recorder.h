#pragma once
// Records everything the GPU does (every kernel, memory copy and memset, with its device
// timestamps, stream and launch's correlation id) through CUPTI's Activity API, from
// construction until finish(). bench --profile uses it (tools/bench/device_time_summary.h turns
// the records into per-step figures), and so does profiler::Profile (core/profile.h), which
// also asks for the external ids: each op's span pushes its id while it is open
// (push_external_id), and CUPTI tells which launch happened under which id.
//
// CUPTI asks for record buffers and hands them back full through two process-wide callbacks,
// so only one recorder may exist at a time. A build without CUDA (or whose toolkit lacks CUPTI)
// does not link CUPTI, and there the constructor throws (available() says so beforehand).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "minidl/core/device_activity.h"

namespace minidl {

class CuptiActivityRecorder {
 public:
  // Whether this build links CUPTI.
  static bool available();
  // CUPTI's clock, on which the records' timestamps are, in ns.
  static uint64_t timestamp_ns();
  // The id that the launches of this thread carry until the matching pop (ids nest); with no
  // recorder correlating they go nowhere. No-ops in a build without CUPTI.
  static void push_external_id(uint64_t id);
  static void pop_external_id();

  // Registers the buffer callbacks and enables kernel, memcpy and memset records; with
  // `correlate`, also the runtime and driver API records that carry the external ids.
  explicit CuptiActivityRecorder(bool correlate = false);
  // Disables recording if finish() did not; logs, never throws.
  ~CuptiActivityRecorder();
  CuptiActivityRecorder(const CuptiActivityRecorder&) = delete;
  CuptiActivityRecorder& operator=(const CuptiActivityRecorder&) = delete;

  // Forgets what was recorded so far and goes on recording. Synchronise the device first.
  void discard_recorded();

  // Flushes CUPTI's buffers, disables recording and returns the records in the order CUPTI
  // delivered them. Synchronise the device first: CUPTI's flush does not, and a kernel still
  // running has no end time yet.
  std::vector<DeviceActivity> finish();

  // After finish(), with `correlate`: the external id each launch's correlation id was made
  // under (launches made under none are not in it).
  const std::unordered_map<uint32_t, uint64_t>& external_ids() const { return external_ids_; }

 private:
  bool correlate_;
  bool finished_ = false;
  std::unordered_map<uint32_t, uint64_t> external_ids_;
};

}  // namespace minidl
