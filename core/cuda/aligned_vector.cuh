#pragma once
// Vectorised loads and stores (include from .cu files only); when a kernel may use them is
// core/cuda/vector_access.h.
#include <cuda_runtime.h>

#include <cstdint>

namespace minidl::cuda {

// `Width` elements of T that move as one memory access.
template <class T, int Width>
struct alignas(sizeof(T) * Width) AlignedVector {
  T values[Width];
};

// Vector `index` of `data` (elements index * Width ...), which vector_aligned has accepted.
template <int Width, class T>
__device__ __forceinline__ AlignedVector<T, Width> load_vector(const T* data, int64_t index) {
  return reinterpret_cast<const AlignedVector<T, Width>*>(data)[index];
}

template <int Width, class T>
__device__ __forceinline__ void store_vector(T* data, int64_t index,
                                             const AlignedVector<T, Width>& vector) {
  reinterpret_cast<AlignedVector<T, Width>*>(data)[index] = vector;
}

}  // namespace minidl::cuda
