#pragma once
// Inverted dropout, as torch.nn.functional.dropout: in training each element is zeroed with
// probability p and the survivors are scaled by 1 / (1 - p), so the expected value is
// unchanged and evaluation needs no rescaling.
#include "minidl/core/tensor.h"

namespace minidl {

// p must lie in [0, 1]. With !training or p == 0 the input itself is returned; p == 1 gives
// input * 0 (zeros, NaN stays NaN, as PyTorch). The mask comes from the global Philox generator
// (core/generator.h): element i (row-major) of a call keeps its value when the uniform draw of
// counter offset + i is >= p, so the same seed gives the same mask on the CPU and on CUDA.
// The output is contiguous (row-major), whatever the input's layout.
Tensor dropout(const Tensor& input, double p, bool training);

}  // namespace minidl
