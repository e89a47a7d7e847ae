#pragma once
// Where gather and scatter read and write: the offsets one element of the index names, written
// once as MINIDL_HOST_DEVICE functions for ops/cpu/indexing.cpp and ops/cuda/indexing.cu.
//
// For gather(x, dim, index) and scatter(out, dim, index, src), element c = (c0, c1, ...) of
// index pairs self[c0, ..., index[c], ...] (index[c] in place of c[dim]) with other[c], where
// self is x (gather) or out (scatter) and other is gather's out or scatter's src. index may be
// smaller than self and other in every dim (and than self along `dim` too), so each tensor keeps
// its own strides.
#include <cstdint>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl {

// The most dims gather and scatter take (as many as the element-wise CUDA kernels).
inline constexpr int kMaxIndexingDims = 8;

// Passed by value to the CUDA kernels.
struct IndexingGeometry {
  int dims = 0;                                  // of index, self and other (at least 1)
  int dim = 0;                                   // the indexed dim
  int64_t self_dim_size = 0;                     // the bound of the index values
  int64_t index_sizes[kMaxIndexingDims] = {};    // index's sizes
  int64_t self_strides[kMaxIndexingDims] = {};   // self's strides (contiguous)
  int64_t other_strides[kMaxIndexingDims] = {};  // other's strides (contiguous)
};

namespace indexing_math {

// The offsets of index element `position` (a flat, row-major position): in self without the
// indexed dim's term (add index * self_strides[dim]), and in other.
struct Offsets {
  int64_t self_without_dim = 0;
  int64_t other = 0;
};

MINIDL_HOST_DEVICE Offsets offsets_of(const IndexingGeometry& geometry, int64_t position) {
  Offsets offsets;
  for (int d = geometry.dims - 1; d >= 0; --d) {
    const int64_t coordinate = position % geometry.index_sizes[d];
    position /= geometry.index_sizes[d];
    if (d != geometry.dim) offsets.self_without_dim += coordinate * geometry.self_strides[d];
    offsets.other += coordinate * geometry.other_strides[d];
  }
  return offsets;
}

// What scatter_add adds in: float for the 16-bit floats, the type itself otherwise.
template <class T>
using ScatterAccumulate =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

}  // namespace indexing_math

}  // namespace minidl
