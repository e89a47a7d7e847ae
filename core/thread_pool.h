#pragma once
// The threads that run minidl's CPU kernels (parallel_for, core/parallel.h).
//
// Why minidl has its own pool rather than OpenMP's: libgomp's default wait policy keeps its idle
// threads spinning for a while after every parallel region, and a library cannot change that
// default (libgomp reads OMP_WAIT_POLICY in its initializer, before any of the program's code;
// even a setenv from the executable's .preinit_array is undone when libc's initializer resets
// the environment). On a machine with few cores the spinning threads take the cores from
// everything else a training program runs, and a user's ResNet-20 loop on 2 cores took from 13 to
// 48 s per 50 steps from run to run. This pool's idle threads spin only briefly (kSpinTime), then
// sleep on a condition variable, which the next job wakes.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace minidl::detail {

// A chunk of work: call(context, chunk). A function pointer and a context rather than a
// std::function, so that handing a lambda to the pool never allocates.
struct ChunkTask {
  void (*call)(const void* context, int64_t chunk);
  const void* context;
};

class ThreadPool {
 public:
  // How long an idle thread (or a caller waiting for the last chunk) spins before it sleeps:
  // long enough to carry a thread from one op's kernel to the next op's without a wake-up.
  static constexpr std::chrono::microseconds kSpinTime{50};

  explicit ThreadPool(int64_t threads);  // the caller counts as one: threads - 1 workers
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int64_t threads() const { return static_cast<int64_t>(workers_.size()) + 1; }

  // Runs task(0), ..., task(chunks - 1) on the workers and the calling thread and returns when
  // all have run; rethrows the first exception a chunk threw. A call made while another thread's
  // job runs, or from inside a chunk, runs its chunks on the calling thread alone.
  void run(int64_t chunks, ChunkTask task);

  // Whether the calling thread is running a chunk.
  static bool in_chunk();

 private:
  struct Job;
  void work();
  static void run_chunks(Job& job);

  std::vector<std::thread> workers_;
  std::mutex submit_;                    // one job at a time
  std::atomic<uint64_t> generation_{0};  // bumped for each job, and to stop
  std::atomic<Job*> job_{nullptr};       // the job running, on its caller's stack
  std::atomic<int64_t> attached_{0};     // workers holding job_: the caller waits for none
  std::atomic<bool> stopping_{false};
  // Sleeping: workers wait for generation_ to change, callers for their job's last chunk. A
  // change is made under the mutex, so a thread about to sleep cannot miss it.
  std::mutex sleep_mutex_;
  std::condition_variable work_ready_;
  std::condition_variable job_done_;
};

}  // namespace minidl::detail
