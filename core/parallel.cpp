#include "minidl/core/parallel.h"

#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "minidl/core/error.h"
#include "minidl/core/thread_pool.h"

namespace minidl {
namespace {

int64_t default_thread_count() {
  if (const char* value = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long threads = std::strtol(value, &end, 10);  // "4" or the first of "4,2"
    if (end != value && threads >= 1) return threads;
  }
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) return std::max(CPU_COUNT(&cpus), 1);
  return std::max<int64_t>(std::thread::hardware_concurrency(), 1);
}

// The pool, made at the first parallel op; set_num_threads replaces it. A caller keeps the pool
// it took alive until its job is done.
std::mutex pool_mutex;
std::shared_ptr<detail::ThreadPool> pool;
std::atomic<int64_t> thread_count{0};  // 0 until first asked

std::shared_ptr<detail::ThreadPool> current_pool() {
  std::lock_guard lock(pool_mutex);
  if (!pool) pool = std::make_shared<detail::ThreadPool>(get_num_threads());
  return pool;
}

}  // namespace

int64_t get_num_threads() {
  int64_t threads = thread_count.load(std::memory_order_relaxed);
  if (threads == 0) {
    int64_t unset = 0;
    thread_count.compare_exchange_strong(unset, default_thread_count());
    threads = thread_count.load();
  }
  return threads;
}

void set_num_threads(int64_t threads) {
  MINIDL_CHECK(threads >= 1, "set_num_threads: expected a thread count of at least 1, got ",
               threads);
  std::shared_ptr<detail::ThreadPool> previous;
  {
    std::lock_guard lock(pool_mutex);
    thread_count.store(threads);
    previous = std::move(pool);  // its threads exit when its last caller is done with it
  }
}

namespace detail {

void run_parallel(int64_t chunks, void (*call)(const void*, int64_t), const void* context) {
  current_pool()->run(chunks, ChunkTask{call, context});
}

bool in_parallel_chunk() { return ThreadPool::in_chunk(); }

}  // namespace detail
}  // namespace minidl
