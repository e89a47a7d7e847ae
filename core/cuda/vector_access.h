#pragma once
// The arithmetic of vectorised memory access, in plain C++ so that it is checked by CPU tests
// (tests/core/launch_geometry_test.cpp): a kernel that reads 16 bytes at a time (one LDG.128
// per thread instead of eight 2-byte loads for bfloat16) moves memory at close to the GPU's
// bandwidth, but only from addresses aligned to the vector and only for whole vectors.
// The device side is core/cuda/aligned_vector.cuh.
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace minidl::cuda {

// Bytes one thread reads or writes per access: the widest load a GPU issues.
inline constexpr size_t kVectorBytes = 16;

// Elements per vector for operands whose widest element takes `widest_element_bytes`: every
// operand moves the same number of elements, so the widest one sets it (at least 1).
constexpr int vector_width(size_t widest_element_bytes) {
  return static_cast<int>(std::max<size_t>(1, kVectorBytes / widest_element_bytes));
}

// Whether `data` can be accessed as vectors of `width` elements of `element_bytes` each (a
// misaligned vector access faults): true for the caching allocator's blocks, false for some
// views into them.
inline bool vector_aligned(const void* data, int width, size_t element_bytes) {
  return reinterpret_cast<uintptr_t>(data) % (static_cast<size_t>(width) * element_bytes) == 0;
}

}  // namespace minidl::cuda
