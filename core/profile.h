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
// of any thread (oneDNN's reorders), with their nesting. On a GPU the spans are the host's: the
// time to launch, not the kernels' (tools/bench --profile reads those with CUPTI).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/profiler.h"

namespace minidl::profiler {

// One op's totals over a profile, as a row of torch.profiler's key_averages().
struct OpAverage {
  std::string name;
  std::string input_shapes;  // grouped by input shape only: "[[64, 1, 28, 28], [6, 1, 5, 5]]"
  int64_t calls = 0;
  double total_ms = 0;  // its spans, nested ops included
  double self_ms = 0;   // less the nested ops
};

struct ProfileOptions {
  bool record_shapes = false;  // keep each op's input shapes and dtypes (torch.profiler's)
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
  // The Chrome trace-event JSON of the spans ("X" events in microseconds; the profiling thread
  // is tid 0, an event's other threads 1, 2, ...), written atomically. Perfetto and
  // chrome://tracing open it. Creates the file's folder when it is not there.
  void export_chrome_trace(const std::filesystem::path& path) const;

 private:
  std::unique_ptr<OpProfiler> recorder_;
  bool record_shapes_;
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
