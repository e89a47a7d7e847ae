#pragma once
// The CPU element loop shared by copy, element-wise and comparison kernels.
//
// strided_loop visits every element of a logical shape in row-major order and calls
// fn(offsets), where offsets[k] is that element's offset (in elements) into operand k, from
// the operand's own strides (0 on broadcast dimensions). The range is split over minidl's CPU
// threads; each thread walks its part with carried indices instead of dividing per element.
#include <array>
#include <cstdint>

#include "minidl/core/parallel.h"
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// strided_runs walks the same elements but calls fn(offsets, run) once per run of `run`
// consecutive elements along the innermost dimension, offsets being those of the run's first
// element: for kernels that treat a run as a whole (a copy whose innermost dimension is dense on
// both sides converts it as one flat array).
template <size_t N, class Fn>
void strided_runs(const Shape& sizes, const std::array<Shape, N>& strides, const Fn& fn) {
  const int64_t numel = shape_numel(sizes);
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  parallel_for(0, numel, kDefaultGrain, [&](int64_t begin, int64_t end) {
    Shape index(static_cast<size_t>(ndim), 0);
    std::array<int64_t, N> offsets{};
    int64_t remainder = begin;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      index[d] = remainder % sizes[d];
      remainder /= sizes[d];
      for (size_t k = 0; k < N; ++k) offsets[k] += index[d] * strides[k][d];
    }
    std::array<int64_t, N> inner_strides{};
    if (ndim > 0)
      for (size_t k = 0; k < N; ++k) inner_strides[k] = strides[k][ndim - 1];
    int64_t i = begin;
    while (i < end) {
      const int64_t run = ndim == 0 ? 1 : std::min(sizes[ndim - 1] - index[ndim - 1], end - i);
      fn(offsets, run);
      i += run;
      if (ndim == 0 || i >= end) break;
      // Carry into the outer dimensions.
      for (size_t k = 0; k < N; ++k) offsets[k] -= inner_strides[k] * index[ndim - 1];
      index[ndim - 1] = 0;
      for (int64_t d = ndim - 2; d >= 0; --d) {
        ++index[d];
        for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
        if (index[d] < sizes[d]) break;
        for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * sizes[d];
        index[d] = 0;
      }
    }
  });
}

template <size_t N, class Fn>
void strided_loop(const Shape& sizes, const std::array<Shape, N>& strides, const Fn& fn) {
  std::array<int64_t, N> inner_strides{};
  if (!sizes.empty())
    for (size_t k = 0; k < N; ++k) inner_strides[k] = strides[k].back();
  strided_runs<N>(sizes, strides, [&](std::array<int64_t, N> offsets, int64_t run) {
    for (int64_t j = 0; j < run; ++j) {
      fn(offsets);
      for (size_t k = 0; k < N; ++k) offsets[k] += inner_strides[k];
    }
  });
}

}  // namespace minidl::cpu
