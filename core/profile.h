#pragma once
// Profiling a program of your own, as torch.profiler does:
//
//   minidl::profiler::Profile profile;            // records from here
//   for (int i = 0; i < 5; ++i) {
//     minidl::profiler::RecordFunction step("train_step");   // a named span of your own
//     train_step();
//   }
//   profile.stop();
//   std::cout << profile.table();                  // by op: calls, total, self, mean, % of wall
//   profile.export_chrome_trace("trace.json");     // open in https://ui.perfetto.dev
//
// With `Profile profile({.record_shapes = true});` each op also keeps its inputs' shapes and
// dtypes: in the trace (each span's "Input Dims" and "Input type", PyTorch's names) and in
// `key_averages(true)` / `table(rows, true)`, a row per op and input shapes (PyTorch's
// group_by_input_shape).
//
// It records the spans of minidl's ops on the thread that made it (every op's forward, each
// autograd node's backward, the optimizer's step: the scopes of core/profiler.h) and the events
// of any thread (oneDNN's reorders), with their nesting. On a GPU (a build with CUPTI and a
// device present) it also records what the device did, as torch.profiler's CUDA activity:
// every kernel, copy and memset, each under the op that launched it (the op's id is CUPTI's
// external id while it is open), on a track per stream in the trace, and each op's device time
// in the table.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "minidl/core/cupti_activity_recorder.h"
#include "minidl/core/device_activity.h"
#include "minidl/core/profiler.h"

namespace minidl::profiler {

// One op's totals over a profile, as a row of torch.profiler's key_averages().
struct OpAverage {
  std::string name;
  std::string input_shapes;  // grouped by input shape only: "[[64, 1, 28, 28], [6, 1, 5, 5]]"
  int64_t calls = 0;
  double total_ms = 0;  // its spans, nested ops included
  double self_ms = 0;   // less the nested ops
  // The device time of the kernels, copies and memsets it launched itself, not through a
  // nested op (torch.profiler's "Self CUDA").
  double device_ms = 0;
};

// One kernel, copy or memset of the device, on the profile's clock.
struct DeviceSpan {
  std::string name;
  DeviceActivityKind kind = DeviceActivityKind::kKernel;
  int64_t start_ns = 0;  // since the profile started, as the ops' spans
  int64_t duration_ns = 0;
  uint32_t stream = 0;
  uint64_t op_id = 0;  // the ProfileSpan::id of the op that launched it; 0: none did
};

struct ProfileOptions {
  bool record_shapes = false;  // keep each op's input shapes and dtypes (torch.profiler's)
  // Record the device's kernels, copies and memsets where this build has CUPTI and a GPU is
  // present (torch.profiler's ProfilerActivity.CUDA, on by default as there); nothing otherwise.
  bool record_device = true;
};

class Profile {
 public:
  // Starts recording; at most one Profile (or OpProfiler) at a time.
  explicit Profile(ProfileOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  Profile(Profile&&) = default;  // a stopped profile's results, returned from a function

  // Ends recording (the destructor does, if not called); the results below read what it kept.
  void stop();

  // The ops by self time, longest first; with group_by_input_shape a row per op and input
  // shapes (which needs record_shapes).
  std::vector<OpAverage> key_averages(bool group_by_input_shape = false) const;
  // key_averages() as a table of at most `rows` rows, with the wall time recorded.
  std::string table(size_t rows = 25, bool group_by_input_shape = false) const;
  // The wall time from construction to stop().
  double wall_ms() const { return wall_ms_; }
  // The spans, in the order they ended.
  const std::vector<ProfileSpan>& spans() const { return spans_; }
  // What the device did, by start time (empty without a device or CUPTI).
  const std::vector<DeviceSpan>& device_spans() const { return device_spans_; }
  // Adds a stopped profile's device activities: each placed on the profile's clock
  // (device_to_profile_ns is the profile's time less CUPTI's at one instant) and put under the
  // op whose id `external_ids` gives its launch. stop() calls it with what CUPTI recorded; it is
  // public so that a recorder of one's own (or a test) can fill a profile.
  void add_device_activities(const std::vector<DeviceActivity>& activities,
                             const std::unordered_map<uint32_t, uint64_t>& external_ids,
                             int64_t device_to_profile_ns);
  // The Chrome trace-event JSON of the spans ("X" events in microseconds; process 0 is the host:
  // the profiling thread is tid 0, an event's other threads 1, 2, ...; process 1 the device, a
  // track per stream, each activity with its op's "External id" and an arrow from the op),
  // written atomically. Perfetto and chrome://tracing open it. Creates the file's folder when
  // it is not there.
  void export_chrome_trace(const std::filesystem::path& path) const;

 private:
  std::unique_ptr<CuptiActivityRecorder> device_recorder_;  // while recording the device
  std::unique_ptr<OpProfiler> recorder_;
  bool record_shapes_;
  int64_t device_to_profile_ns_ = 0;
  std::vector<DeviceSpan> device_spans_;
  std::chrono::steady_clock::time_point start_;
  double wall_ms_ = 0;
  std::vector<ProfileSpan> spans_;
};

// A span named by the program (torch.profiler.record_function), recorded like an op while a
// Profile records on this thread; nothing otherwise.
class RecordFunction {
 public:
  explicit RecordFunction(std::string name) : name_(std::move(name)), scope_(name_) {}
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  std::string name_;  // before scope_, which views it
  ProfileScope scope_;
};

}  // namespace minidl::profiler
