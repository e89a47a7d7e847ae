#include "minidl/core/thread_pool.h"

namespace minidl::detail {
namespace {

thread_local bool t_in_chunk = false;

// Sets t_in_chunk for a scope: a parallel_for inside a chunk runs inline.
class InChunk {
 public:
  InChunk() : previous_(t_in_chunk) { t_in_chunk = true; }
  ~InChunk() { t_in_chunk = previous_; }
  InChunk(const InChunk&) = delete;
  InChunk& operator=(const InChunk&) = delete;

 private:
  bool previous_;
};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins while `waiting()` holds, for at most ThreadPool::kSpinTime; whether it stopped holding.
template <class Waiting>
bool spin_while(const Waiting& waiting) {
  const auto deadline = std::chrono::steady_clock::now() + ThreadPool::kSpinTime;
  for (int i = 1;; ++i) {
    if (!waiting()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    cpu_relax();
  }
}

}  // namespace

// One run(): lives on its caller's stack until every chunk has run and no worker holds it.
struct ThreadPool::Job {
  ThreadPool* pool = nullptr;
  ChunkTask task;
  int64_t chunks = 0;
  std::atomic<int64_t> next{0};       // the next chunk to claim
  std::atomic<int64_t> remaining{0};  // chunks not yet finished
  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception a chunk threw
};

ThreadPool::ThreadPool(int64_t threads) {
  for (int64_t i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(sleep_mutex_);
    stopping_.store(true);
    generation_.fetch_add(1);
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

bool ThreadPool::in_chunk() { return t_in_chunk; }

void ThreadPool::run_chunks(Job& job) {
  InChunk in_chunk;
  for (int64_t chunk; (chunk = job.next.fetch_add(1)) < job.chunks;) {
    try {
      job.task.call(job.task.context, chunk);
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.remaining.fetch_sub(1) == 1) {
      std::lock_guard lock(job.pool->sleep_mutex_);  // the caller is spinning or asleep
      job.pool->job_done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t chunks, ChunkTask task) {
  std::unique_lock lock(submit_, std::try_to_lock);
  if (!lock.owns_lock() || t_in_chunk || workers_.empty()) {
    InChunk in_chunk;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) task.call(task.context, chunk);
    return;
  }
  Job job;
  job.pool = this;
  job.task = task;
  job.chunks = chunks;
  job.remaining.store(chunks);
  job_.store(&job);
  {
    std::lock_guard lock(sleep_mutex_);
    generation_.fetch_add(1);
  }
  work_ready_.notify_all();
  run_chunks(job);
  if (!spin_while([&] { return job.remaining.load() != 0; })) {
    std::unique_lock lock(sleep_mutex_);
    job_done_.wait(lock, [&] { return job.remaining.load() == 0; });
  }
  // A worker that woke late may hold the job's address: it finds no chunk left and lets go.
  job_.store(nullptr);
  while (attached_.load() != 0) std::this_thread::yield();
  if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::work() {
  // Not generation_.load(): a worker that starts after the first job or after the stop must
  // still see that generation as new.
  uint64_t seen = 0;
  while (true) {
    if (!spin_while([&] { return generation_.load() == seen; })) {
      std::unique_lock lock(sleep_mutex_);
      work_ready_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load();
    if (stopping_.load()) return;
    attached_.fetch_add(1);
    if (Job* job = job_.load()) run_chunks(*job);
    attached_.fetch_sub(1);
  }
}

}  // namespace minidl::detail
