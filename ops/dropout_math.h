#pragma once
// The math of dropout, written once for the CPU loop (ops/cpu/dropout.cpp) and the CUDA kernel
// (ops/cuda/dropout.cu), so a seed gives the same mask on both.
//
// Note [Dropout masks are recomputed, not stored]
//   Element i of a dropout call (row-major) keeps its value when the 53-bit uniform u drawn
//   from Philox counter offset + i (words 0-1, as uniform draws use; see Note [Philox counters
//   in minidl] in core/philox.h) satisfies u >= p, which happens with probability 1 - p. The
//   comparison is exact (u is k * 2^-53, a double), so host and device agree bit for bit.
//   Backward needs the mask again; it recomputes it from (seed, offset), which the autograd
//   node keeps: 16 bytes instead of numel bytes for a u8 mask (activation memory is what limits
//   batch sizes), at the price of one Philox evaluation per element (about 40 integer
//   operations), which is cheap next to the memory traffic of this memory-bound kernel.
#include <cstdint>

#include "minidl/core/macros.h"
#include "minidl/core/philox.h"

namespace minidl::dropout {

// Whether element `index` (offset + i) of a call with drop probability p survives.
MINIDL_HOST_DEVICE bool keeps(uint64_t seed, uint64_t index, double p) {
  const philox::Block words = philox::element_words(seed, index);
  return philox::uniform_bits_to_unit<53>(philox::join(words.w0, words.w1)) >= p;
}

// x * scale (scale = 1 / (1 - p)) when kept, else 0; computed in Acc (float, or double for
// float64), rounded once to T.
template <class Acc, class T>
MINIDL_HOST_DEVICE T masked_scale(T x, bool kept, Acc scale) {
  return kept ? static_cast<T>(static_cast<Acc>(x) * scale) : static_cast<T>(Acc(0));
}

}  // namespace minidl::dropout
