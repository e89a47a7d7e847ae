#pragma once
// The kernel interface of layer_norm (ops/layer_norm.cpp), implemented by ops/cpu/layer_norm.cpp
// and ops/cuda/layer_norm.cu with the math of ops/layer_norm_math.h; dispatched by kernels_for
// (Note [Kernel tables] in core/dispatch.h). Conventions:
// - input, output, grad_output and grad_input are contiguous, [R, D] as layout says, of the
//   input's dtype; outputs are overwritten. The kernels are called with layout.numel() > 0.
// - mean and rstd are [R]; weight, bias, grad_weight and grad_bias are [D]; all contiguous and of
//   the accumulation dtype: float32, or float64 for float64 input (CPU only). weight and bias
//   may be undefined (1 and 0); so may grad_weight and grad_bias (not wanted).
// - Sums over rows (grad_weight, grad_bias) merge per-block partial sums in a fixed order,
//   without atomics, so results repeat exactly, at any CPU thread count. CUDA kernels run on the
//   current stream of the tensors' device and never synchronise the host.
#include "minidl/core/tensor.h"
#include "minidl/ops/layer_norm_math.h"

namespace minidl {

struct LayerNormKernels {
  // Per row: mean, rstd = 1 / sqrt(biased var + eps), and out = (x - mean) * rstd * w + b.
  void (*layer_norm_forward)(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                             const Tensor& input, const Tensor& weight, const Tensor& bias,
                             const layer_norm_math::RowLayout& layout, double eps);
  // grad_input by layer_norm_math::input_grad, from the forward's mean and rstd.
  void (*layer_norm_backward_input)(const Tensor& grad_input, const Tensor& grad_output,
                                    const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& weight, const layer_norm_math::RowLayout& layout);
  // grad_weight = sum over rows of dy * x_hat, grad_bias = sum over rows of dy (where defined).
  void (*layer_norm_backward_parameters)(const Tensor& grad_weight, const Tensor& grad_bias,
                                         const Tensor& grad_output, const Tensor& input,
                                         const Tensor& mean, const Tensor& rstd,
                                         const layer_norm_math::RowLayout& layout);

  static const LayerNormKernels kCpu;
  static const LayerNormKernels kCuda;
};

}  // namespace minidl
