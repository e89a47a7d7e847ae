#pragma once
// CPU convolution: im2col + OpenBLAS GEMM (defined in ops/cpu/conv.cpp).
//
// Arguments are validated by ops/conv.cpp and never degenerate (N, C_in and C_out are > 0).
// Inputs may have any layout; the kernels read contiguous NCHW copies where needed. float32 and
// float64 are computed as they are, float16 and bfloat16 in float32 and rounded back.
#include "minidl/core/tensor.h"
#include "minidl/ops/conv.h"

namespace minidl::cpu {

// input [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined
// -> [N, C_out, H_out, W_out], in the input's memory format.
Tensor conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& params);

// The requested gradients for grad_output [N, C_out, H_out, W_out]: the input's in the input's
// memory format, the weight's in the weight's.
Conv2dGrads conv2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                            const Conv2dParams& params, Conv2dGradRequest request);

}  // namespace minidl::cpu
