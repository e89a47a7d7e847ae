#pragma once
// The order in which the element loops (the CPU copy, ops/cpu/copy.cpp; every CUDA element-wise
// kernel and the CUDA copy, ops/cuda/loops.cuh) walk N operands that share one logical shape.
// Host code only, so that a CPU test checks what the CUDA kernels are given.
//
// Note [Element-wise geometry]
// Dimensions of size 1 are dropped; the rest are ordered by the first operand's strides (the
// output's), smallest first, ties in row-major order; then a dimension is merged into the one
// inside it where, for every operand, stepping it is the same as running off the end of the
// inner one (stride == inner stride * inner size; broadcast dimensions, stride 0, merge with
// each other). Walking the output in its own memory order makes its stores unit-stride whatever
// its layout (channels-last, transposed): a layout-changing copy (NCHW to NHWC) writes whole
// cache lines and gathers its reads instead, which the caches partly serve when neighbouring
// threads come back for the rest of a line, where scattered stores each cost a partial write
// (PyTorch's TensorIterator orders by the output too). Merging leaves a contiguous-to-contiguous
// operation (a dtype conversion) as one dimension of unit strides: one flat loop, with no index
// arithmetic per element.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "minidl/core/tensor_options.h"

namespace minidl {

// Sizes and strides (in elements) of the merged dimensions, innermost first: dimension d has
// sizes[d] elements, and operand k steps strides[d][k] elements along it. No dimensions: one
// element.
template <size_t N>
struct IterationShape {
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, N>> strides;

  int64_t ndim() const { return static_cast<int64_t>(sizes.size()); }
  // One run over contiguous memory in every operand.
  bool is_flat() const {
    if (sizes.empty()) return true;
    if (sizes.size() > 1) return false;
    return std::all_of(strides[0].begin(), strides[0].end(), [](int64_t s) { return s == 1; });
  }
};

// The iteration shape of operands (the output first) that all have `sizes`, each with its own
// strides (broadcast inputs carry zero strides): see Note [Element-wise geometry].
template <size_t N>
IterationShape<N> make_iteration_shape(const Shape& sizes,
                                       const std::array<const Shape*, N>& strides) {
  static_assert(N >= 1, "the first operand is the output, whose strides order the dimensions");
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) dims.push_back(d);
  // Innermost (smallest output stride) first; ties keep their row-major order, inner first.
  std::reverse(dims.begin(), dims.end());
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t a, size_t b) { return (*strides[0])[a] < (*strides[0])[b]; });

  IterationShape<N> shape;
  for (size_t d : dims) {
    std::array<int64_t, N> dim_strides;
    for (size_t k = 0; k < N; ++k) dim_strides[k] = (*strides[k])[d];
    if (!shape.sizes.empty()) {
      bool contiguous_with_inner = true;
      for (size_t k = 0; k < N; ++k)
        contiguous_with_inner =
            contiguous_with_inner && dim_strides[k] == shape.strides.back()[k] * shape.sizes.back();
      if (contiguous_with_inner) {
        shape.sizes.back() *= sizes[d];
        continue;
      }
    }
    shape.sizes.push_back(sizes[d]);
    shape.strides.push_back(dim_strides);
  }
  return shape;
}

}  // namespace minidl
