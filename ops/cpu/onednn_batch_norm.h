#pragma once
// Batch normalisation in training on oneDNN (ops/cpu/onednn_batch_norm.cpp;
// ops/cpu/without_onednn.cpp in a build without it), asked by ops/norm.cpp before its own kernels
// for a CPU input. Each answers nullopt where oneDNN is switched off (ops/onednn.h) or does not
// take the input, and the caller then computes it with ops/cpu/norm.cpp.
//
// oneDNN takes channels-last [N, C, H, W] input only, float32, or bfloat16 on CPUs with AVX-512
// BF16 instructions (onednn_bfloat16_instructions(); the per-channel tensors and statistics stay
// float32). There, minidl's kernels read
// each channel with a stride of C elements, and oneDNN's AVX2 kernel on one thread did a forward
// and backward 4-5x faster than they do on two (ResNet-20's three shapes at batch 512: 17.7
// against 71.7, 8.2 against 41.0 and 4.1 against 17.4 ms, 2026-11-24, Zen 3). For NCHW its only
// kernel on AVX2 is a plain C++ loop, 2.5-3x slower on one thread than minidl's on two (72.1
// against 22.6 ms at 512x16x32x32), so NCHW stays with minidl. Batch statistics need the whole
// batch, so the primitive runs on the calling thread alone (Note [oneDNN on minidl's threads] in
// ops/cpu/onednn_context.h): oneDNN's kernels want the channels dense, and for a share of the
// channels (strided memory) it offered only its reference kernel.
#include <optional>

#include "minidl/core/tensor.h"

namespace minidl::cpu {

// What the forward pass gives: the output (channels-last, the input's dtype) and, per channel
// (float32 [C]), the batch's mean, invstd = 1 / sqrt(variance + eps), and the biased variance
// (oneDNN's backward takes it rather than invstd).
struct OnednnBatchNormStatistics {
  Tensor output;
  Tensor mean;
  Tensor invstd;
  Tensor variance;
};

// y = (x - mean) * invstd * weight + bias with the batch's statistics, for `input` dense in
// channels-last, and the running statistics (when defined) updated in place as
// norm::finish_statistics does (ops/norm_math.h). weight, bias, running_mean and running_var are
// [C] (float32, or the bfloat16 input's dtype), or undefined.
std::optional<OnednnBatchNormStatistics> onednn_batch_norm_forward(
    const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
    const Tensor& running_var, double momentum, double eps);

struct OnednnBatchNormGradients {
  Tensor grad_input;   // channels-last and of the input's dtype, like the input
  Tensor grad_weight;  // float32 [C]; undefined without weight
  Tensor grad_bias;    // float32 [C]; undefined without bias
};

// The gradients of the forward pass above (the same input, weight, bias and eps; its mean and
// variance) from grad_output, dense in channels-last.
std::optional<OnednnBatchNormGradients> onednn_batch_norm_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& mean, const Tensor& variance,
    const Tensor& weight, bool has_bias, double eps);

}  // namespace minidl::cpu
