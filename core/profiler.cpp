#include "minidl/core/profiler.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "minidl/core/cuda/build.h"
#include "minidl/core/cupti_activity_recorder.h"
#include "minidl/core/error.h"
#include "minidl/core/tensor.h"

#if MINIDL_WITH_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace minidl {

namespace {

struct Totals {
  int64_t calls = 0;
  int64_t ns = 0;
};

// The one profiler's records. Ops come from its own thread alone, events from any thread; one
// mutex guards both (a step records a few thousand spans, so it is never contended for long).
struct Session {
  std::mutex mutex;
  bool active = false;
  std::map<std::string, Totals, std::less<>> ops, events;
  // The timeline, when kept, and the ops' inputs in it, when recorded.
  bool keep_timeline = false;
  bool record_shapes = false;
  std::chrono::steady_clock::time_point start;
  std::vector<ProfileSpan> spans;
  std::map<std::thread::id, int> event_threads;  // other threads' numbers, 1, 2, ...
};

Session& session() {
  static Session s;
  return s;
}

std::atomic<bool> any_profiler{false};  // a fast "no" for events
std::atomic<bool> nvtx_on{[] {
  const char* value = std::getenv("MINIDL_NVTX");
  return nvtx_available() && value != nullptr && std::string_view(value) == "1";
}()};
thread_local bool profiling_thread = false;      // this thread made the profiler
thread_local bool recording_shapes = false;      // ... and it records the ops' inputs
thread_local bool pushing_external_ids = false;  // ... and its ops' ids go to CUPTI
thread_local uint64_t last_span_id = 0;          // the id of the scope opened last
thread_local ProfileScope* innermost_scope = nullptr;
// Op names, tracked for the allocator's memory by op whether or not a profiler records.
std::atomic<bool> op_name_tracking{false};
thread_local std::string_view tracked_op_name;

void add(std::map<std::string, Totals, std::less<>>& totals, std::string_view name, int64_t ns) {
  auto found = totals.find(name);
  if (found == totals.end()) found = totals.emplace(std::string(name), Totals{}).first;
  ++found->second.calls;
  found->second.ns += ns;
}

std::vector<OpProfiler::Record> sorted(const std::map<std::string, Totals, std::less<>>& totals) {
  std::vector<OpProfiler::Record> records;
  for (const auto& [name, t] : totals)
    records.push_back({name, t.calls, static_cast<double>(t.ns) / 1e6});
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.self_ms > b.self_ms; });
  return records;
}

int64_t nanoseconds_between(std::chrono::steady_clock::time_point start,
                            std::chrono::steady_clock::time_point end) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
}

int64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return nanoseconds_between(start, std::chrono::steady_clock::now());
}

// Under the session's mutex: a span from `start`, `span_ns` long, kept when the timeline is.
ProfileSpan* keep_span(Session& s, std::string_view name,
                       std::chrono::steady_clock::time_point start, int64_t span_ns,
                       int64_t self_ns, int depth, bool event, uint64_t id) {
  if (!s.keep_timeline) return nullptr;
  int thread = 0;
  if (!profiling_thread) {
    const auto [found, added] = s.event_threads.emplace(
        std::this_thread::get_id(), static_cast<int>(s.event_threads.size()) + 1);
    thread = found->second;
  }
  ProfileSpan& span = s.spans.emplace_back();
  span.name = std::string(name);
  span.start_ns = nanoseconds_between(s.start, start);
  span.duration_ns = span_ns;
  span.thread = thread;
  span.depth = depth;
  span.event = event;
  span.self_ns = self_ns;
  span.id = id;
  return &span;
}

void push_nvtx_range(std::string_view name) {
#if MINIDL_WITH_CUDA
  const std::string terminated(name);  // NVTX takes a C string; only while ranges are on
  nvtxRangePushA(terminated.c_str());
#else
  (void)name;
#endif
}

void pop_nvtx_range() {
#if MINIDL_WITH_CUDA
  nvtxRangePop();
#endif
}

}  // namespace

bool nvtx_available() { return cuda::kBuilt; }

void set_nvtx_enabled(bool enabled) {
  MINIDL_CHECK(!enabled || nvtx_available(),
               "set_nvtx_enabled: this build of minidl has no CUDA, and NVTX comes with the CUDA "
               "toolkit; build with -DMINIDL_CUDA=ON for Nsight Systems' ranges");
  nvtx_on.store(enabled, std::memory_order_relaxed);
}

bool nvtx_enabled() { return nvtx_on.load(std::memory_order_relaxed); }

void set_op_name_tracking(bool enabled) {
  op_name_tracking.store(enabled, std::memory_order_relaxed);
}

std::string_view current_op_name() { return tracked_op_name; }

OpProfiler::OpProfiler(bool keep_timeline, bool record_shapes, bool push_external_ids) {
  MINIDL_CHECK(keep_timeline || !record_shapes,
               "OpProfiler: record_shapes keeps each op's inputs with its span, so it needs "
               "keep_timeline=true");
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  MINIDL_CHECK(!s.active,
               "OpProfiler: another profiler is recording; expected at most one at a "
               "time");
  s.active = true;
  s.ops.clear();
  s.events.clear();
  s.keep_timeline = keep_timeline;
  s.record_shapes = record_shapes;
  s.start = std::chrono::steady_clock::now();
  s.spans.clear();
  s.event_threads.clear();
  profiling_thread = true;
  recording_shapes = record_shapes;
  pushing_external_ids = push_external_ids;
  last_span_id = 0;
  any_profiler.store(true, std::memory_order_release);
}

OpProfiler::~OpProfiler() {
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.active = false;
  profiling_thread = false;
  recording_shapes = false;
  pushing_external_ids = false;
  any_profiler.store(false, std::memory_order_release);
}

std::vector<OpProfiler::Record> OpProfiler::ops() const {
  const std::lock_guard<std::mutex> lock(session().mutex);
  return sorted(session().ops);
}

std::vector<OpProfiler::Record> OpProfiler::events() const {
  const std::lock_guard<std::mutex> lock(session().mutex);
  return sorted(session().events);
}

std::vector<ProfileSpan> OpProfiler::timeline() const {
  const std::lock_guard<std::mutex> lock(session().mutex);
  return session().spans;
}

std::chrono::steady_clock::time_point OpProfiler::start_time() const {
  const std::lock_guard<std::mutex> lock(session().mutex);
  return session().start;
}

ProfileScope::ProfileScope(std::string_view name)
    : name_(name),
      // A scope just inside one of the same name is part of it (an autograd node's kernel named
      // as the node): one call, not two.
      recording_(profiling_thread &&
                 !(innermost_scope != nullptr && innermost_scope->name_ == name)) {
  if (nvtx_on.load(std::memory_order_relaxed)) {
    push_nvtx_range(name);
    nvtx_range_ = true;
  }
  if (op_name_tracking.load(std::memory_order_relaxed)) {
    outer_op_name_ = tracked_op_name;
    tracked_op_name = name;
    tracks_op_name_ = true;
  }
  if (!recording_) return;
  outer_ = innermost_scope;
  depth_ = outer_ != nullptr ? outer_->depth_ + 1 : 0;
  id_ = ++last_span_id;
  innermost_scope = this;
  if (pushing_external_ids) {
    CuptiActivityRecorder::push_external_id(id_);
    external_id_pushed_ = true;
  }
  start_ = Clock::now();
}

ProfileScope::ProfileScope(std::string_view name,
                           std::initializer_list<std::reference_wrapper<const Tensor>> inputs)
    : ProfileScope(name) {
  if (!recording_ || !recording_shapes) return;
  input_dims_.reserve(inputs.size());
  input_types_.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    input_dims_.emplace_back(input.defined() ? input.sizes() : std::vector<int64_t>{});
    input_types_.emplace_back(input.defined() ? dtype_name(input.dtype()) : std::string_view());
  }
}

ProfileScope::~ProfileScope() {
  if (nvtx_range_) pop_nvtx_range();
  if (tracks_op_name_) tracked_op_name = outer_op_name_;
  if (!recording_) return;
  const int64_t span = nanoseconds_since(start_);
  if (external_id_pushed_) CuptiActivityRecorder::pop_external_id();
  innermost_scope = outer_;
  if (outer_ != nullptr) outer_->nested_ns_ += span;
  if (!profiling_thread) return;  // the profiler ended inside this scope
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  add(s.ops, name_, span - nested_ns_);
  ProfileSpan* kept =
      keep_span(s, name_, start_, span, span - nested_ns_, depth_, /*event=*/false, id_);
  if (kept != nullptr) {
    kept->input_dims = std::move(input_dims_);
    kept->input_types = std::move(input_types_);
  }
}

ProfileEvent::ProfileEvent(const char* name)
    : name_(name), recording_(any_profiler.load(std::memory_order_acquire)) {
  if (recording_) start_ = Clock::now();
}

ProfileEvent::~ProfileEvent() {
  if (!recording_) return;
  const int64_t span = nanoseconds_since(start_);
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.active) return;
  add(s.events, name_, span);
  keep_span(s, name_, start_, span, span, 0, /*event=*/true, /*id=*/0);
}

}  // namespace minidl
