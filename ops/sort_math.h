#pragma once
// The order sort, argsort and topk put a row in, written once as MINIDL_HOST_DEVICE functions
// for the CPU kernels (ops/cpu/sort.cpp) and the CUDA kernels (ops/cuda/sort.cu).
//
// Note [Sort order]
//   Elements are compared as PyTorch compares them: by value, NaN counting as larger than every
//   number (so NaNs come last ascending and first descending), 16-bit floats through float.
//   Equal values keep their input order, in both directions, as torch.sort(stable=True) does:
//   each comparison breaks a tie by the element's index in the row. That makes the order a
//   strict total order, so any sorting algorithm (std::sort, a bitonic network) produces the
//   one stable result, and the non-stable sort is deterministic too (it is the stable one).
#include <cstdint>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::sort_math {

// The value a comparison reads: 16-bit floats as float, every other type as itself.
template <class T>
MINIDL_HOST_DEVICE auto comparable(T value) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return static_cast<float>(value);
  else
    return value;
}

template <class V>
MINIDL_HOST_DEVICE bool is_nan(V value) {
  if constexpr (std::is_floating_point_v<V>)
    return value != value;
  else
    return false;
}

// Whether (a, index_a) comes strictly before (b, index_b) in the ascending (or descending)
// order of Note [Sort order].
template <class T>
MINIDL_HOST_DEVICE bool precedes(T a_value, int64_t index_a, T b_value, int64_t index_b,
                                 bool descending) {
  const auto a = comparable(a_value), b = comparable(b_value);
  const bool a_nan = is_nan(a), b_nan = is_nan(b);
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return index_a < index_b;
    return descending ? a_nan : b_nan;  // NaN is the largest value
  }
  if (a < b) return !descending;
  if (b < a) return descending;
  return index_a < index_b;
}

}  // namespace minidl::sort_math
