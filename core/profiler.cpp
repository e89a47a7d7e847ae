#include "minidl/core/profiler.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "minidl/core/error.h"

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
};

Session& session() {
  static Session s;
  return s;
}

std::atomic<bool> any_profiler{false};       // a fast "no" for events
thread_local bool profiling_thread = false;  // this thread made the profiler
thread_local ProfileScope* innermost_scope = nullptr;

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

int64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

}  // namespace

OpProfiler::OpProfiler() {
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  MINIDL_CHECK(!s.active,
               "OpProfiler: another profiler is recording; expected at most one at a "
               "time");
  s.active = true;
  s.ops.clear();
  s.events.clear();
  profiling_thread = true;
  any_profiler.store(true, std::memory_order_release);
}

OpProfiler::~OpProfiler() {
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.active = false;
  profiling_thread = false;
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

ProfileScope::ProfileScope(std::string_view name)
    : name_(name),
      // A scope just inside one of the same name is part of it (an autograd node's kernel named
      // as the node): one call, not two.
      recording_(profiling_thread &&
                 !(innermost_scope != nullptr && innermost_scope->name_ == name)) {
  if (!recording_) return;
  outer_ = innermost_scope;
  innermost_scope = this;
  start_ = Clock::now();
}

ProfileScope::~ProfileScope() {
  if (!recording_) return;
  const int64_t span = nanoseconds_since(start_);
  innermost_scope = outer_;
  if (outer_ != nullptr) outer_->nested_ns_ += span;
  if (!profiling_thread) return;  // the profiler ended inside this scope
  Session& s = session();
  const std::lock_guard<std::mutex> lock(s.mutex);
  add(s.ops, name_, span - nested_ns_);
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
  if (s.active) add(s.events, name_, span);
}

}  // namespace minidl
