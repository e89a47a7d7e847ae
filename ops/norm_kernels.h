#pragma once
// The kernel interface of batch_norm (ops/norm.cpp), implemented by ops/cpu/norm.cpp and
// ops/cuda/norm.cu with the math of ops/norm_math.h; dispatched by kernels_for (Note [Kernel
// tables] in core/dispatch.h). Conventions:
// - input, output, grad_output and grad_input are dense in `layout` (ops/norm_math.h) and have
//   the input's dtype; outputs are overwritten.
// - Per-channel tensors ([C]: mean, invstd, running statistics, weight, bias, gradient sums) are
//   contiguous and of the accumulation dtype: float32, or float64 for float64 input (CPU only).
//   weight, bias and the running statistics may be undefined.
// - Per-channel sums merge in a fixed order, without atomics, so results repeat exactly. CUDA
//   kernels run on the current stream of the tensors' device and never synchronise the host.
#include "minidl/core/tensor.h"
#include "minidl/ops/norm_math.h"

namespace minidl {

struct NormKernels {
  // mean and invstd = 1 / sqrt(biased var + eps) of each channel of the batch; running_mean and
  // running_var (when defined) updated in place with `momentum` (running_var with the unbiased
  // variance). Needs layout.count() >= 2.
  void (*batch_norm_statistics)(const Tensor& mean, const Tensor& invstd,
                                const Tensor& running_mean, const Tensor& running_var,
                                const Tensor& input, const norm::ChannelLayout& layout,
                                double momentum, double eps);
  // out = (input - mean) * invstd * weight + bias (weight 1 and bias 0 where undefined); with
  // `relu`, then out = relu(out + residual) by norm::add_relu in the same pass (batch_norm_relu;
  // residual may be undefined, and is read only with relu).
  void (*batch_norm_apply)(const Tensor& out, const Tensor& input, const Tensor& mean,
                           const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                           const norm::ChannelLayout& layout, const Tensor& residual, bool relu);
  // sum_dy[c] = sum of dy, sum_dy_xmu[c] = sum of dy * (input - mean[c]), where dy is
  // grad_output, or with relu_output defined (batch_norm_relu's output, dense in `layout`)
  // grad_output masked by relu's backward (norm::relu_passed).
  void (*batch_norm_backward_reduce)(const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                     const Tensor& grad_output, const Tensor& input,
                                     const Tensor& mean, const norm::ChannelLayout& layout,
                                     const Tensor& relu_output);
  // grad_input by norm::input_grad of the same dy; sum_dy and sum_dy_xmu are read for
  // Statistics::Batch only.
  void (*batch_norm_backward_input)(const Tensor& grad_input, const Tensor& grad_output,
                                    const Tensor& input, const Tensor& mean, const Tensor& invstd,
                                    const Tensor& weight, const Tensor& sum_dy,
                                    const Tensor& sum_dy_xmu, const norm::ChannelLayout& layout,
                                    norm::Statistics statistics, const Tensor& relu_output);

  static const NormKernels kCpu;
  static const NormKernels kCuda;
};

}  // namespace minidl
