#pragma once
// A contiguous tensor seen as [outer, size, inner] around one of its dims: the geometry of the
// kernels that work along one dim (index_select and index_add, ops/cpu/shape.cpp and
// ops/cuda/shape.cu; the scans, ops/scan.cpp). Host code.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

struct AroundDim {
  int64_t outer = 1, size = 1, inner = 1;
};

// `dim` in range for `sizes`; a 0-d shape (no sizes) is one line of one element.
inline AroundDim around_dim(const Shape& sizes, int64_t dim) {
  AroundDim view;
  if (sizes.empty()) return view;
  for (int64_t d = 0; d < dim; ++d) view.outer *= sizes[static_cast<size_t>(d)];
  view.size = sizes[static_cast<size_t>(dim)];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(sizes.size()); ++d)
    view.inner *= sizes[static_cast<size_t>(d)];
  return view;
}

inline AroundDim around_dim(const Tensor& t, int64_t dim) { return around_dim(t.sizes(), dim); }

}  // namespace minidl
