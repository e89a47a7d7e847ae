#pragma once
// What minidl's oneDNN calls share: the CPU engine, how a primitive runs on one of minidl's
// threads, and the count of primitives made (ops/onednn.h).
//
// Note [oneDNN on minidl's threads]: Debian's oneDNN runs its primitives on OpenMP (libgomp)
// threads, and libgomp's idle threads spin after every parallel region, taking the cores that
// minidl's own threads wait for (why minidl has its own pool, core/thread_pool.h). So, as with
// OpenBLAS (ops/cpu/blas_threads.h), a primitive runs on the calling thread alone: execute() sets
// OpenMP's thread count to 1 around the call, so that oneDNN runs sequentially and libgomp starts
// no thread at all, and the caller splits the work over minidl's threads (a convolution: one
// contiguous share of the batch per thread, ops/cpu/onednn_conv.cpp). A primitive made with
// user_scratchpad() is then safe to run on several threads at once, each with its own scratchpad
// (oneDNN's own scratchpad is per primitive).
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace minidl::cpu::onednn {

const dnnl::engine& engine();

// Sets the calling thread's OpenMP thread count to 1 for its lifetime and gives back the one it
// had, which a user's own OpenMP code may rely on. Primitives are made under it too: oneDNN sizes
// their work for the thread count it sees when making them.
class OneOpenMPThread {
 public:
  OneOpenMPThread();
  ~OneOpenMPThread();
  OneOpenMPThread(const OneOpenMPThread&) = delete;
  OneOpenMPThread& operator=(const OneOpenMPThread&) = delete;

 private:
  int saved_;
};

// Runs `primitive` on the calling thread alone and returns when it has finished.
void execute(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args);

// Runs `reorder` from `from` to `to` as execute() does, counted in a profile (core/profiler.h)
// as the event `what` ("oneDNN reorder: activations", "...: weights"): reorders are the layout
// changes around oneDNN's kernels, and their count and time per step are what a layout choice
// should bring down.
void execute_reorder(const dnnl::reorder& reorder, const dnnl::memory& from, const dnnl::memory& to,
                     const char* what);

// The attributes of every primitive minidl makes: the caller passes the scratchpad.
dnnl::primitive_attr user_scratchpad();

// Counts a primitive made, for onednn_primitives_created().
void count_primitive();

// Memory for `desc` at `data` (oneDNN does not own it).
dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data);

// A user scratchpad (user_scratchpad()) of `bytes` at `data`.
dnnl::memory scratchpad_memory(void* data, size_t bytes);

// Logs at debug level that oneDNN refused an input of `op`, which minidl's kernels then take.
void log_refusal(const char* op, const char* why);

// Note [oneDNN primitive cache]: making a primitive descriptor (oneDNN's search for an
// implementation) costs from tens of microseconds to milliseconds, so each op keeps the plans
// (primitives and what goes with them) it makes, one per key of everything they depend on, for
// the process: after a training loop's first step, no step makes a primitive
// (onednn_primitives_created() stays). A key oneDNN refuses is remembered as refused (nullptr),
// and its calls go to minidl's own kernels.
template <class Key, class Plan, class Hash>
class PlanCache {
 public:
  explicit PlanCache(const char* op) : op_(op) {}

  // The plan of `key`: make(key) the first time, under OneOpenMPThread; a dnnl::error it throws
  // (or a nullptr it returns) means refused.
  template <class Make>
  std::shared_ptr<const Plan> get(const Key& key, const Make& make) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    std::shared_ptr<const Plan> plan;
    try {
      const OneOpenMPThread one_thread;
      plan = make(key);
    } catch (const dnnl::error& e) {
      log_refusal(op_, e.what());
    }
    plans_.emplace(key, plan);
    return plan;
  }

 private:
  const char* op_;
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Plan>, Hash> plans_;
};

}  // namespace minidl::cpu::onednn
