#pragma once
// Layer normalisation, as torch.nn.functional.layer_norm.
#include "minidl/core/tensor.h"

namespace minidl {

// Normalises each row of a floating-point input over its last dims, `normalized_shape` (which
// must equal them, and is at least one dim): with mean and the biased variance of the row's
// D = numel(normalized_shape) values,
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// where weight and bias (each may be undefined: 1 and 0) have shape normalized_shape and are on
// the input's device, of the input's dtype or, for float16/bfloat16 input, float32 (mixed
// precision keeps parameters in float32). Statistics and sums are computed in float32 (float64
// for float64 input); the output has the input's dtype and shape, contiguous. Under autocast
// (float16 or bfloat16) the op runs in float32, as PyTorch's: its output is float32.
// Differentiable with respect to input, weight and bias; backward keeps the input, each row's
// mean and 1 / sqrt(var + eps), and the weight. The weight and bias gradients sum over rows in a
// fixed order: the same bits on every run and at any thread count.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

}  // namespace minidl
