#pragma once
// Where a CPU training step spends its time, op by op (what `tools/bench --profile` reports on
// the CPU; on CUDA it reads the device's kernels with CUPTI instead):
//
//   OpProfiler profiler;             // records on this thread while alive
//   for (int i = 0; i < 10; ++i) step();
//   for (const auto& op : profiler.ops()) ... op.name, op.calls, op.self_ms
//
// Two kinds of record:
// - Ops: a ProfileScope names a span of the profiling thread's work ("conv2d", "copy_", an
//   autograd node such as "Conv2dBackward"). Scopes nest; each reports its self time (its span
//   less the spans of the scopes inside it), so the ops' self times add up to no more than the
//   wall time of the steps. Scopes on other threads (data loader workers, the shares of a
//   parallel_for) are not recorded: they would count one wall-clock span several times, and
//   neither is a scope just inside one of the same name (it is part of that call).
// - Events: a ProfileEvent names work that may run on any thread, such as oneDNN's reorders in
//   the shares of a convolution; it reports a count and the sum of its spans over all threads
//   (thread time, not wall time), and does not take its time out of the op around it.
//
// At most one OpProfiler exists at a time. With none, a scope costs a thread-local read and an
// event an atomic load. profiler::Profile (core/profile.h) is the user's API on top of it: a
// timeline exported as a Chrome trace and a summary table.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace minidl {

class Tensor;

// One span of the timeline an OpProfiler keeps when asked to (core/profile.h exports it).
struct ProfileSpan {
  std::string name;
  int64_t start_ns = 0;     // since the profiler started
  int64_t duration_ns = 0;  // the whole span, nested scopes included
  int thread = 0;  // 0: the profiling thread; an event's other threads 1, 2, ... as first seen
  int depth = 0;   // an op's nesting among the profiling thread's scopes (0: outermost); events 0
  bool event = false;
  int64_t self_ns = 0;  // an op's span less its nested scopes'; an event's whole span
  // With record_shapes, an op's inputs as it named them: sizes ({} for an undefined tensor,
  // such as a missing bias) and dtype names ("" for an undefined one), as PyTorch's
  // "Input Dims" and "Input type". Empty otherwise, and for events.
  std::vector<std::vector<int64_t>> input_dims;
  std::vector<std::string> input_types;
  // An op's id, 1, 2, ... in the order the profiling thread's scopes opened (0 for events): the
  // external id its GPU launches carry when the profiler correlates them.
  uint64_t id = 0;
};

class OpProfiler {
 public:
  struct Record {
    std::string name;
    int64_t calls = 0;
    double self_ms = 0.0;  // ops: time less the nested scopes'; events: summed over threads
  };

  // With keep_timeline, every span is kept too (timeline()), not only the totals; with
  // record_shapes (which needs the timeline) each op's span keeps its inputs' shapes and dtypes;
  // with push_external_ids each op's id is CUPTI's external id for the GPU work launched while
  // it is the innermost open scope (core/cupti_activity_recorder.h).
  explicit OpProfiler(bool keep_timeline = false, bool record_shapes = false,
                      bool push_external_ids = false);
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // The records so far, by self time, longest first.
  std::vector<Record> ops() const;
  std::vector<Record> events() const;
  // The spans so far, in the order they ended (empty without keep_timeline).
  std::vector<ProfileSpan> timeline() const;
  // The time the spans' start_ns count from.
  std::chrono::steady_clock::time_point start_time() const;
};

// NVTX ranges for Nsight Systems (`nsys profile`): while on, every ProfileScope (each op, each
// autograd node's backward, the optimizer's step, the Trainer's forward and backward phases, the
// gradients' all-reduce launches, a RecordFunction) is also an NVTX range on its thread, from the
// CUDA toolkit's header-only NVTX 3, as PyTorch's emit_nvtx. Off by default: a scope then costs
// one relaxed atomic load more. On with set_nvtx_enabled(true) or the environment variable
// MINIDL_NVTX=1. A build without CUDA has no NVTX: set_nvtx_enabled(true) throws there.
bool nvtx_available();
void set_nvtx_enabled(bool enabled);
bool nvtx_enabled();

// The name of the innermost ProfileScope open on this thread while op names are tracked, else ""
// (and "" outside every scope); valid while that scope is open. Off by default: a scope then
// costs one relaxed atomic load more. cuda::record_memory_by_op turns it on (Note [Peak memory
// by op] in core/cuda/memory_by_op.h).
void set_op_name_tracking(bool enabled);
std::string_view current_op_name();

// Records the span from its construction to its destruction as op `name` (a string that
// outlives the profiler: a literal or an autograd node's name) when this thread is profiling,
// and as an NVTX range while those are on.
class ProfileScope {
 public:
  explicit ProfileScope(std::string_view name);
  // An op's scope with its inputs, whose shapes and dtypes a profiler that records shapes keeps
  // with the span; otherwise they cost a branch, and nothing is read from them.
  ProfileScope(std::string_view name,
               std::initializer_list<std::reference_wrapper<const Tensor>> inputs);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  std::string_view name_;
  bool recording_;
  Clock::time_point start_;
  int64_t nested_ns_ = 0;  // spans of the scopes closed inside this one
  ProfileScope* outer_ = nullptr;
  int depth_ = 0;
  uint64_t id_ = 0;
  bool nvtx_range_ = false;      // pushed an NVTX range, to pop
  bool tracks_op_name_ = false;  // made name_ current_op_name(), to restore
  std::string_view outer_op_name_;
  bool external_id_pushed_ = false;               // pushed id_ as CUPTI's external id, to pop
  std::vector<std::vector<int64_t>> input_dims_;  // with record_shapes only
  std::vector<std::string> input_types_;
};

// Records the span from its construction to its destruction as event `name` (a literal), on any
// thread, while a profiler exists.
class ProfileEvent {
 public:
  explicit ProfileEvent(const char* name);
  ~ProfileEvent();
  ProfileEvent(const ProfileEvent&) = delete;
  ProfileEvent& operator=(const ProfileEvent&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  const char* name_;
  bool recording_;
  Clock::time_point start_;
};

}  // namespace minidl
