#pragma once
// CUDA launchers of batch_norm (ops/norm.h), defined in ops/cuda/norm.cu, with the conventions
// of ops/cpu/norm.h: input, output, grad_output and grad_input dense in `layout`, of the input's
// dtype, outputs overwritten; per-channel tensors ([C]) contiguous float32 (float64 never
// reaches the GPU), weight, bias and the running statistics possibly undefined. Each launcher
// runs on the current stream of the tensors' device, never synchronises the host, and uses no
// atomics (results repeat exactly).
#include "minidl/core/tensor.h"
#include "minidl/ops/norm_math.h"

namespace minidl::cuda {

// mean and invstd = 1 / sqrt(biased var + eps) of each channel of the batch; running_mean and
// running_var (when defined) updated in place with `momentum` (running_var with the unbiased
// variance). Needs layout.count() >= 2.
void batch_norm_statistics_kernel(const Tensor& mean, const Tensor& invstd,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& input, const norm::ChannelLayout& layout,
                                  double momentum, double eps);
// out = (input - mean) * invstd * weight + bias (weight 1 and bias 0 where undefined).
void batch_norm_apply_kernel(const Tensor& out, const Tensor& input, const Tensor& mean,
                             const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                             const norm::ChannelLayout& layout);
// sum_dy[c] = sum of grad_output, sum_dy_xmu[c] = sum of grad_output * (input - mean[c]).
void batch_norm_backward_reduce_kernel(const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                       const Tensor& grad_output, const Tensor& input,
                                       const Tensor& mean, const norm::ChannelLayout& layout);
// grad_input by norm::input_grad; sum_dy and sum_dy_xmu are read for Statistics::Batch only.
void batch_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& invstd,
                                      const Tensor& weight, const Tensor& sum_dy,
                                      const Tensor& sum_dy_xmu, const norm::ChannelLayout& layout,
                                      norm::Statistics statistics);

}  // namespace minidl::cuda
