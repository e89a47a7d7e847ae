#pragma once
// The kernel interface of conv2d (ops/conv.cpp), implemented by ops/cpu/conv.cpp (im2col +
// OpenBLAS GEMM) and ops/cuda/conv.cpp (cuDNN, on the current stream of the tensors' device,
// without synchronising the host); dispatched by kernels_for (Note [Kernel tables] in
// core/dispatch.h). Conventions:
// - Arguments are validated by ops/conv.cpp and never degenerate (N, C_in and C_out are > 0).
// - Inputs may have any layout. The output and the input's gradient take the input's memory
//   format (channels-last when input.suggest_memory_format() is ChannelsLast, else NCHW); the
//   weight's gradient takes the weight's.
// - float32 and float64 are computed as they are; float16 and bfloat16 accumulate in float32.
// cuDNN also depends on three global switches, cudnn_deterministic() and cudnn_benchmark()
// (ops/conv.h) and allow_tf32() (ops/linalg.h), which are part of its algorithm cache key (Note
// [cuDNN algorithm choice]). ops/cuda/conv.cpp reads them itself at each call: they mean nothing to
// the CPU, so they stay out of this interface.
#include "minidl/core/tensor.h"
#include "minidl/ops/conv.h"

namespace minidl {

struct ConvKernels {
  // input [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined
  // -> [N, C_out, H_out, W_out].
  Tensor (*conv2d_forward)(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Conv2dParams& params);
  // The requested gradients for grad_output [N, C_out, H_out, W_out] (any layout).
  Conv2dGrads (*conv2d_backward)(const Tensor& grad_output, const Tensor& input,
                                 const Tensor& weight, const Conv2dParams& params,
                                 Conv2dGradRequest request);

  static const ConvKernels kCpu;
  static const ConvKernels kCuda;
};

}  // namespace minidl
