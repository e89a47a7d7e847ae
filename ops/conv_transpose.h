#pragma once
// 2-D transposed convolution, as torch.nn.functional.conv_transpose2d: the gradient of conv2d
// with respect to its input, used as a layer. Differentiable in the input, the weight and the
// bias. It runs on conv2d's kernels (ops/conv_kernels.h): no kernels of its own.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// input [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW] (PyTorch's layout for the
// transposed convolution: the input channels first), bias [C_out] or undefined
// -> [N, C_out, H_out, W_out] with, per spatial dimension,
//   H_out = (H - 1) * stride.h - 2 * padding.h + dilation.h * (kH - 1) + output_padding.h + 1.
// output_padding adds rows and columns on one side of the output only, to pick among the input
// sizes a strided conv2d maps to H; as PyTorch, each must be below max(stride, dilation).
// The output (and the input's gradient) takes the input's memory format. float32, float64 (CPU
// only), float16 and bfloat16; under autocast it runs in the autocast dtype, as conv2d.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        Size2 stride = 1, Size2 padding = 0, Size2 output_padding = 0,
                        int64_t groups = 1, Size2 dilation = 1);

// [N, C_out, H_out, W_out] by the formula above, for a validated input and weight.
Shape conv_transpose2d_output_sizes(const Shape& input_sizes, const Shape& weight_sizes,
                                    int64_t groups, Size2 stride, Size2 padding,
                                    Size2 output_padding, Size2 dilation);

}  // namespace minidl
