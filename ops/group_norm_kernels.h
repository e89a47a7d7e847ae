#pragma once
// The kernel interface of group_norm (ops/group_norm.cpp), implemented by ops/cpu/group_norm.cpp
// and ops/cuda/group_norm.cu with the math of ops/group_norm_math.h and ops/layer_norm_math.h;
// dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h). Conventions:
// - input, output, grad_output and grad_input are contiguous [N, C, *] as layout says, of the
//   input's dtype; outputs are overwritten. The kernels are called with layout.numel() > 0.
// - mean and rstd are [N * G] (row n * G + g); weight, bias, grad_weight and grad_bias are [C];
//   all contiguous and of the accumulation dtype: float32, or float64 for float64 input (CPU
//   only). weight and bias may be undefined (1 and 0); so may grad_weight and grad_bias (not
//   wanted).
// - Each sum (a row's statistics, a channel's parameter gradients) is merged in an order fixed by
//   the shape, without atomics, so results repeat exactly, at any CPU thread count. CUDA kernels
//   run on the current stream of the tensors' device and never synchronise the host.
#include "minidl/core/tensor.h"
#include "minidl/ops/group_norm_math.h"

namespace minidl {

struct GroupNormKernels {
  // Per (sample, group): mean, rstd = 1 / sqrt(biased var + eps); out = x_hat * w[c] + b[c].
  void (*group_norm_forward)(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                             const Tensor& input, const Tensor& weight, const Tensor& bias,
                             const group_norm_math::GroupLayout& layout, double eps);
  // grad_input by layer_norm_math::input_grad of g = dy * w[c], from the forward's statistics.
  void (*group_norm_backward_input)(const Tensor& grad_input, const Tensor& grad_output,
                                    const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& weight,
                                    const group_norm_math::GroupLayout& layout);
  // grad_weight[c] = sum of dy * x_hat, grad_bias[c] = sum of dy over samples and * (where
  // defined).
  void (*group_norm_backward_parameters)(const Tensor& grad_weight, const Tensor& grad_bias,
                                         const Tensor& grad_output, const Tensor& input,
                                         const Tensor& mean, const Tensor& rstd,
                                         const group_norm_math::GroupLayout& layout);

  static const GroupNormKernels kCpu;
  static const GroupNormKernels kCuda;
};

}  // namespace minidl
