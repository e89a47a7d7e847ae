#pragma once
// Row reductions for the CPU's vectorisable float loops (attention's tiles, cross-entropy's
// rows): in 16 explicit lanes, because the compiler vectorises a loop over lanes but not a float
// sum over a row (that would reorder it), and the fixed order gives the same bits in a file's
// baseline, AVX2 and AVX-512 versions (Note [Loops compiled for AVX-512 and AVX2] in
// ops/cpu/vector_versions.h).
#include <algorithm>
#include <cstdint>
#include <limits>

#include "minidl/ops/cpu/vector_versions.h"

namespace minidl::cpu {

inline constexpr int64_t kLanes = 16;

// The lanes' sum, in a fixed tree.
inline float sum_of_lanes(float (&lanes)[kLanes]) {
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  return lanes[0];
}

inline float max_of(const float* x, int64_t n) {
  float lanes[kLanes];
  std::fill_n(lanes, kLanes, -std::numeric_limits<float>::infinity());
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = x[c + l] > lanes[l] ? x[c + l] : lanes[l];
  for (int64_t l = 0; c + l < n; ++l) lanes[l] = x[c + l] > lanes[l] ? x[c + l] : lanes[l];
  float max = lanes[0];
  for (int64_t l = 1; l < kLanes; ++l) max = lanes[l] > max ? lanes[l] : max;
  return max;
}

inline float sum_of(const float* x, int64_t n) {
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += x[c + l];
  for (int64_t l = 0; c + l < n; ++l) lanes[l] += x[c + l];
  return sum_of_lanes(lanes);
}

}  // namespace minidl::cpu
