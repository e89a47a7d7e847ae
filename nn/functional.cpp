#include "minidl/nn/functional.h"

#include "minidl/ops/attention.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/conv1d.h"
#include "minidl/ops/conv_transpose.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/group_norm.h"
#include "minidl/ops/layer_norm.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/pool.h"
#include "minidl/ops/shape.h"

namespace minidl::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return minidl::linear(x, weight, bias);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dFuncOptions& options) {
  return minidl::conv2d(input, weight, bias, options.stride(), options.padding(),
                        options.dilation(), options.groups());
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv1dFuncOptions& options) {
  return minidl::conv1d(input, weight, bias, options.stride(), options.padding(),
                        options.dilation(), options.groups());
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dFuncOptions& options) {
  return minidl::conv_transpose2d(input, weight, bias, options.stride(), options.padding(),
                                  options.output_padding(), options.groups(), options.dilation());
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  return minidl::batch_norm(input, running_mean, running_var, options.weight(), options.bias(),
                            options.training(), options.momentum(), options.eps());
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
  return minidl::layer_norm(input, options.normalized_shape(), options.weight(), options.bias(),
                            options.eps());
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options) {
  return minidl::group_norm(input, options.num_groups(), options.weight(), options.bias(),
                            options.eps());
}

Tensor relu(const Tensor& x) { return minidl::relu(x); }
Tensor sigmoid(const Tensor& x) { return minidl::sigmoid(x); }
Tensor tanh(const Tensor& x) { return minidl::tanh(x); }
Tensor gelu(const Tensor& x, const GELUFuncOptions& options) {
  return minidl::gelu(x, options.approximate());
}
Tensor silu(const Tensor& x) { return minidl::silu(x); }
Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& options) {
  return minidl::leaky_relu(x, options.negative_slope());
}
Tensor elu(const Tensor& x, const ELUFuncOptions& options) {
  return minidl::elu(x, options.alpha());
}
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options) {
  return minidl::softplus(x, options.beta(), options.threshold());
}
Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& options) {
  return minidl::hardtanh(x, options.min_val(), options.max_val());
}
Tensor softmax(const Tensor& x, int64_t dim) { return minidl::softmax(x, dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return minidl::log_softmax(x, dim); }

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return minidl::max_pool2d(input, options.kernel_size(), options.stride(), options.padding());
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
  return minidl::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(),
                            options.count_include_pad());
}

Tensor max_pool2d(const Tensor& input, Size2 kernel_size) {
  return max_pool2d(input, MaxPool2dFuncOptions(kernel_size));
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel_size) {
  return avg_pool2d(input, AvgPool2dFuncOptions(kernel_size));
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  return minidl::adaptive_avg_pool2d(input, output_size);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  return minidl::flatten(x, start_dim, end_dim);
}

Tensor dropout(const Tensor& x, const DropoutFuncOptions& options) {
  return minidl::dropout(x, options.p(), options.training());
}

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
  return minidl::embedding(weight, input, options.padding_idx());
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  return minidl::scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                              scale);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyFuncOptions& options) {
  return minidl::cross_entropy(logits, target, options.reduction(), options.label_smoothing(),
                               options.ignore_index());
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction) {
  return minidl::nll_loss(log_probs, target, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return minidl::mse_loss(input, target, options.reduction());
}

}  // namespace minidl::nn::functional
