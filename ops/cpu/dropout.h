#pragma once
// CPU kernel of ops/dropout.h. `out` and `input` are contiguous floating-point tensors of the
// same shape; out[i] = input[i] / (1 - p) when element i survives (counter start.offset + i
// under start.seed, ops/dropout_math.h), else 0. Backward runs it again on the gradient with
// the forward's `start`, which reproduces the mask.
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl::cpu {

void dropout_kernel(const Tensor& out, const Tensor& input, double p, GeneratorState start);

}  // namespace minidl::cpu
