#pragma once
// nn::functional: the layers' operations as functions, as torch::nn::functional (usually
// imported as `namespace F = minidl::nn::functional;`). Thin wrappers over ops/: the layers call
// these, so a module and its function always compute the same thing.
#include <cstdint>
#include <optional>

#include "minidl/core/tensor.h"
#include "minidl/nn/options/activation.h"
#include "minidl/nn/options/batchnorm.h"
#include "minidl/nn/options/conv.h"
#include "minidl/nn/options/dropout.h"
#include "minidl/nn/options/embedding.h"
#include "minidl/nn/options/loss.h"
#include "minidl/nn/options/normalization.h"
#include "minidl/nn/options/normalize.h"
#include "minidl/nn/options/padding.h"
#include "minidl/nn/options/pooling.h"
#include "minidl/nn/options/upsampling.h"

namespace minidl::nn::functional {

// x [..., in] W^T + b: weight [out, in], bias [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
// input [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Conv2dFuncOptions& options = {});
// input [N, C_in, L], weight [C_out, C_in / groups, k], bias [C_out] or undefined
// -> [N, C_out, L_out]: conv2d over a unit height.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Conv1dFuncOptions& options = {});
// input [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW], bias [C_out] or undefined
// (see ops/conv_transpose.h).
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dFuncOptions& options = {});
// Over dim 1 of [N, C, ...]; running_mean and running_var [C] are updated in place in training
// (see ops/norm.h), and may be undefined in training.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options = {});
// Over the last dims of input, options.normalized_shape() (see ops/layer_norm.h):
// F::layer_norm(x, F::LayerNormFuncOptions({C}).weight(w).bias(b)).
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
// Over groups of channels of [N, C, *] (see ops/group_norm.h):
// F::group_norm(x, F::GroupNormFuncOptions(2).weight(w).bias(b)).
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);

Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& x);  // x * sigmoid(x)
Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& options = {});
Tensor elu(const Tensor& x, const ELUFuncOptions& options = {});
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options = {});
Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& options = {});
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
// Non-overlapping windows (stride = kernel_size, no padding): F::max_pool2d(x, 2).
Tensor max_pool2d(const Tensor& input, Size2 kernel_size);
Tensor avg_pool2d(const Tensor& input, Size2 kernel_size);
Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);

Tensor flatten(const Tensor& x, int64_t start_dim = 1, int64_t end_dim = -1);
Tensor dropout(const Tensor& x, const DropoutFuncOptions& options = {});
// The rows of weight [num_embeddings, embedding_dim] at input (int64 or int32, any shape):
// input.shape + [embedding_dim]. PyTorch's argument order; the op is minidl::embedding.
Tensor embedding(const Tensor& input, const Tensor& weight,
                 const EmbeddingFuncOptions& options = {});
// query [..., T, D], key [..., S, D], value [..., S, Dv] -> [..., T, Dv]; see ops/attention.h.
// LibTorch has no functional form with options (only torch::scaled_dot_product_attention), so
// this takes PyTorch's arguments positionally.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

// logits [N, C], target int64 class indices [N].
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyFuncOptions& options = {});
// log_probs [N, C], target int64 class indices [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
// log_probs [N, C], target int64 class indices [N], with PyTorch's per-class weight [C] and
// ignore_index: F::nll_loss(x, y, F::NLLLossFuncOptions().weight(w).ignore_index(0)).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossFuncOptions& options);
// The element-wise losses of ops/pointwise_loss.h, with LibTorch's options.
Tensor binary_cross_entropy_with_logits(
    const Tensor& input, const Tensor& target,
    const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
Tensor huber_loss(const Tensor& input, const Tensor& target,
                  const HuberLossFuncOptions& options = {});
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});

// x / max(||x||_p, eps) along options.dim(), as torch.nn.functional.normalize.
Tensor normalize(const Tensor& x, const NormalizeFuncOptions& options = {});

// F.pad: constant, reflect, replicate or circular padding (see minidl::pad in ops/shape.h):
// F::pad(x, F::PadFuncOptions({1, 1}).mode(kReflect)).
Tensor pad(const Tensor& input, const PadFuncOptions& options);
// F.interpolate for "nearest" ([N, C, W] or [N, C, H, W]) and "bilinear" ([N, C, H, W]), with
// PyTorch's output sizes and source positions (see ops/interpolate.h):
// F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8}).mode(kBilinear)).
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options);

}  // namespace minidl::nn::functional
