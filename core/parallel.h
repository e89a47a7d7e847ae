#pragma once
// parallel_for splits [begin, end) into chunks of at least `grain` iterations over the OpenMP
// threads; below one grain it runs inline, so small tensors pay no threading cost.
#include <algorithm>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace minidl {

inline constexpr int64_t kDefaultGrain = 32768;

// The most threads a parallel_for uses (1 without OpenMP).
inline int64_t max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const Fn& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
#if defined(_OPENMP)
  if (n > grain && !omp_in_parallel()) {
    const int64_t max_chunks = (n + grain - 1) / grain;
    const int64_t chunks = std::min<int64_t>(max_chunks, max_threads());
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(chunks))
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t lo = begin + n * c / chunks;
      const int64_t hi = begin + n * (c + 1) / chunks;
      fn(lo, hi);
    }
    return;
  }
#endif
  (void)grain;
  fn(begin, end);
}

}  // namespace minidl
