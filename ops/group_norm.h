#pragma once
// Group normalisation, as torch.nn.functional.group_norm.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// Normalises a floating-point input [N, C, *] (any rank >= 2) over groups of channels: the C
// channels are split into num_groups groups of C / num_groups consecutive channels, and each
// (sample, group) is normalised by the mean and biased variance of its (C / num_groups) * (the
// product of *) values:
//   y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c]
// weight and bias (each may be undefined: 1 and 0) are [C], on the input's device, of the
// input's dtype or, for float16/bfloat16 input, float32. Statistics, the affine transform and
// every sum are computed in float32 (float64 for float64 input), so a 16-bit output is rounded
// once. The output has the input's dtype and shape, and its memory format (a channels-last
// [N, C, H, W] input gives a channels-last output). Under autocast (float16 or bfloat16) the op
// runs in float32, as PyTorch's: its output is float32.
// Differentiable with respect to input, weight and bias; backward keeps the input, the weight
// and each (sample, group)'s mean and 1 / sqrt(var + eps). The weight and bias gradients are
// sums in a fixed order: the same bits on every run.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

}  // namespace minidl
