#pragma once
// CUDA convolution through cuDNN (defined in ops/cuda/conv.cpp). Runs on the current stream of
// the tensors' device, without synchronising the host.
//
// Arguments are validated by ops/conv.cpp and never degenerate (N, C_in and C_out are > 0).
// The layout follows the input: when input.suggest_memory_format() is ChannelsLast the
// convolution runs in NHWC (the weight is laid out channels-last for it too) and the output
// and the input's gradient are channels-last; otherwise everything is NCHW. The weight's
// gradient comes back in the weight's own memory format.
#include "minidl/core/tensor.h"
#include "minidl/ops/conv.h"

namespace minidl::cuda {

// The global switches a cuDNN convolution depends on, read by ops/conv.cpp at each call.
struct CudnnConvOptions {
  bool deterministic = false;  // only algorithms cuDNN reports as deterministic
  bool allow_tf32 = false;     // float32 may use TF32 tensor cores
};

// input [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined
// -> [N, C_out, H_out, W_out].
Tensor conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& params, const CudnnConvOptions& options);

// The requested gradients for grad_output [N, C_out, H_out, W_out] (any layout).
Conv2dGrads conv2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                            const Conv2dParams& params, Conv2dGradRequest request,
                            const CudnnConvOptions& options);

}  // namespace minidl::cuda
