#pragma once
// Records everything the GPU does (every kernel, memory copy and memset, with its device
// timestamps) through CUPTI's Activity API, from construction until finish(). bench --profile
// uses it; tools/bench/device_time_summary.h turns the records into per-step figures.
//
// CUPTI asks for record buffers and hands them back full through two process-wide callbacks,
// so only one recorder may exist at a time. A build without CUDA (or whose toolkit lacks CUPTI)
// does not link CUPTI, and there the constructor throws.
#include <vector>

#include "minidl/tools/bench/device_time_summary.h"

namespace minidl::tools {

class CuptiActivityRecorder {
 public:
  // Registers the buffer callbacks and enables kernel, memcpy and memset records.
  CuptiActivityRecorder();
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

 private:
  bool finished_ = false;
};

}  // namespace minidl::tools
