#pragma once
// parallel_for splits [begin, end) into chunks of at least `grain` iterations over minidl's CPU
// threads (core/thread_pool.h); below one grain it runs inline, so small tensors pay no threading
// cost. get_num_threads / set_num_threads are torch::get_num_threads / torch::set_num_threads.
#include <algorithm>
#include <cstdint>

namespace minidl {

inline constexpr int64_t kDefaultGrain = 32768;

// The threads minidl's CPU kernels use (the calling thread included): OMP_NUM_THREADS when it is
// set (its first value, as OpenMP reads it), else the CPUs this process may run on.
int64_t get_num_threads();

// Sets that count (at least 1), as torch::set_num_threads. Call it between ops: the threads of
// the previous count finish their work and exit first.
void set_num_threads(int64_t threads);

namespace detail {

// Runs call(context, 0), ..., call(context, chunks - 1) over the threads and returns when all
// have run, rethrowing the first exception one threw (core/parallel.cpp).
void run_parallel(int64_t chunks, void (*call)(const void* context, int64_t chunk),
                  const void* context);

// Whether the calling thread is running a chunk (a nested parallel_for then runs inline).
bool in_parallel_chunk();

}  // namespace detail

template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const Fn& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (n > grain && !detail::in_parallel_chunk()) {
    const int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, get_num_threads());
    if (chunks > 1) {
      const auto run_chunk = [&](int64_t c) {
        fn(begin + n * c / chunks, begin + n * (c + 1) / chunks);
      };
      detail::run_parallel(
          chunks,
          [](const void* context, int64_t c) {
            (*static_cast<const decltype(run_chunk)*>(context))(c);
          },
          &run_chunk);
      return;
    }
  }
  fn(begin, end);
}

}  // namespace minidl
