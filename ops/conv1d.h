#pragma once
// 1-D convolution (cross-correlation, as torch.nn.functional.conv1d), differentiable in the
// input, the weight and the bias: conv2d (ops/conv.h) over a unit height, so it has conv2d's
// kernels, dtypes, autocast policy and gradients.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// input [N, C_in, L], weight [C_out, C_in / groups, k], bias [C_out] or undefined
// -> [N, C_out, L_out], L_out = (L + 2 * padding - dilation * (k - 1) - 1) / stride + 1.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

}  // namespace minidl
