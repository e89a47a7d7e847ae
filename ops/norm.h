#pragma once
// Normalisation layers' functional forms, as torch.nn.functional.
#include "minidl/core/tensor.h"

namespace minidl {

// Batch normalisation over dim 1 (channels) of a floating-point [N, C], [N, C, L] or
// [N, C, H, W] input: y = (x - mean) / sqrt(var + eps) * weight + bias, per channel.
// - training: mean and the biased variance of this batch normalise it; running_mean and
//   running_var, when defined, are updated in place:
//     running_mean = (1 - momentum) * running_mean + momentum * mean
//     running_var  = (1 - momentum) * running_var  + momentum * unbiased variance
//   Needs more than one value per channel (N * H * W > 1).
// - evaluation: running_mean and running_var (required) normalise the batch.
// running_mean, running_var, weight and bias are [C] tensors on the input's device, of the
// input's dtype or, for float16/bfloat16 input, float32 (mixed precision keeps parameters in
// float32). weight and bias may be undefined (no affine transform); so may both running
// statistics in training (not tracked). Statistics are computed in float32 (float64 for float64
// input). The output has the input's dtype, under autocast too (as in PyTorch, batch_norm is
// outside the autocast policy: a 16-bit activation stays 16-bit, its statistics and float32
// parameters stay float32). The output keeps the input's memory format (channels-last stays
// channels-last).
// Differentiable with respect to input, weight and bias; backward keeps the input, the batch
// mean and 1 / sqrt(var + eps).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);

// relu(batch_norm(input, ...) + residual) as one op and one autograd node: the ResNet block's
// "BN, ReLU" and "BN, add the shortcut, ReLU" (residual undefined: no add). The sum and the ReLU
// run in place on batch norm's fresh output, so no intermediate tensor is made or kept, and
// the result and every gradient have the bits of the three ops apart. residual has the input's
// shape, dtype and device (any layout). Differentiable with respect to input, weight, bias and
// residual; backward keeps what batch_norm's does and the output.
Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training,
                       double momentum = 0.1, double eps = 1e-5, const Tensor& residual = Tensor());

}  // namespace minidl
