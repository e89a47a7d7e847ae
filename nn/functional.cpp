#include "minidl/nn/functional.h"

#include <cmath>
#include <vector>

#include "minidl/nn/conv_padding.h"
#include "minidl/ops/attention.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/conv1d.h"
#include "minidl/ops/conv_transpose.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/group_norm.h"
#include "minidl/ops/interpolate.h"
#include "minidl/ops/layer_norm.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/pool.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"

namespace minidl::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return minidl::linear(x, weight, bias);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dFuncOptions& options) {
  // A weight of another rank is minidl::conv2d's error to report.
  const Size2 kernel =
      weight.defined() && weight.dim() == 4 ? Size2(weight.size(2), weight.size(3)) : Size2(1);
  const std::vector<int64_t> amounts =
      conv_pad_amounts(options.padding(), kernel, options.stride(), options.dilation(), "conv2d");
  // Unequal sides (kSame with an even kernel) are padded first, as PyTorch does.
  const bool padded_by_conv = symmetric(amounts);
  return minidl::conv2d(padded_by_conv ? input : minidl::pad(input, amounts), weight, bias,
                        options.stride(), padded_by_conv ? Size2(amounts[2], amounts[0]) : 0,
                        options.dilation(), options.groups());
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv1dFuncOptions& options) {
  const int64_t kernel = weight.defined() && weight.dim() == 3 ? weight.size(2) : 1;
  const std::vector<int64_t> amounts =
      conv_pad_amounts(options.padding(), kernel, options.stride(), options.dilation(), "conv1d");
  const bool padded_by_conv = symmetric(amounts);
  return minidl::conv1d(padded_by_conv ? input : minidl::pad(input, amounts), weight, bias,
                        options.stride(), padded_by_conv ? amounts[0] : 0, options.dilation(),
                        options.groups());
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

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossFuncOptions& options) {
  const Tensor& weight = options.weight();
  if (!weight.defined())
    return minidl::nll_loss(log_probs, target, options.reduction(), options.ignore_index());
  // The per-sample losses (0 for ignored samples) check log_probs and target first.
  const Tensor losses =
      minidl::nll_loss(log_probs, target, Reduction::None, options.ignore_index());
  const int64_t classes = log_probs.size(1);
  MINIDL_CHECK(weight.dim() == 1 && weight.size(0) == classes,
               "nll_loss: expected a weight of one value per class, shape [", classes,
               "], got weight of shape ", weight.sizes());
  MINIDL_CHECK(weight.is_floating_point(), "nll_loss: expected a floating-point weight, got ",
               weight.dtype());
  MINIDL_CHECK(weight.device() == log_probs.device(), "nll_loss: expected weight on ",
               log_probs.device(), " like log_probs, got weight on ", weight.device());
  // Each sample's weight is its target's; an ignored sample's is 0 (its index may be any
  // value, so it reads class 0 and is then masked).
  const Tensor counted = ne(target, static_cast<double>(options.ignore_index()));
  const Tensor readable_target = where(counted, target, 0);  // an integer 0 keeps int64
  const Tensor sample_weight =
      where(counted, index_select(weight.to(losses.dtype()), 0, readable_target), 0.0);
  const Tensor weighted = mul(losses, sample_weight);
  switch (options.reduction()) {
    case Reduction::None: return weighted;
    case Reduction::Sum: return sum(weighted);
    // As PyTorch: the weighted mean, NaN when every sample is ignored.
    case Reduction::Mean: return div(sum(weighted), sum(sample_weight));
  }
  MINIDL_CHECK(false, "nll_loss: expected reduction None, Mean or Sum, got the value ",
               static_cast<int>(options.reduction()));
  return {};
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return minidl::binary_cross_entropy_with_logits(input, target, options.weight(),
                                                  options.pos_weight(), options.reduction());
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options) {
  return minidl::binary_cross_entropy(input, target, options.weight(), options.reduction());
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossFuncOptions& options) {
  return minidl::smooth_l1_loss(input, target, options.reduction(), options.beta());
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return minidl::l1_loss(input, target, options.reduction());
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  return minidl::huber_loss(input, target, options.reduction(), options.delta());
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  return minidl::kl_div(input, target, options.reduction(), options.log_target());
}

Tensor normalize(const Tensor& x, const NormalizeFuncOptions& options) {
  check_defined(x, "normalize", "input");
  const int64_t dim = wrap_dim(options.dim(), x.dim(), "normalize");
  // As PyTorch's: x / max(||x||_p, eps); the norm's gradient is 0 where the norm is 0.
  const Tensor norms = minidl::norm(x, options.p(), {dim}, /*keepdim=*/true);
  return div(x, clamp_min(norms, options.eps()));
}

Tensor pad(const Tensor& input, const PadFuncOptions& options) {
  return minidl::pad(input, options.pad(), options.mode(), options.value());
}

namespace {

// F.interpolate's "area": adaptive average pooling to the output size (the scale factors only
// give the size, as PyTorch's). A 3-D input pools as [N, C, 1, W]; a 5-D one first over (H, W),
// with D among the channels, then over D: the mean over D of equal-sized (H, W) windows' means
// is the mean over the (D, H, W) window. float16 and bfloat16 are pooled in float32 and rounded
// once.
Tensor area_interpolate(const Tensor& input, const Shape& output_size) {
  const bool narrow = input.dtype() == kFloat16 || input.dtype() == kBFloat16;
  const Tensor x = narrow ? input.to(kFloat32) : input;
  const int64_t n = x.size(0), c = x.size(1);
  Tensor out;
  if (x.dim() == 3) {
    out = minidl::adaptive_avg_pool2d(x.unsqueeze(2), Size2(1, output_size[0])).squeeze(2);
  } else if (x.dim() == 4) {
    out = minidl::adaptive_avg_pool2d(x, Size2(output_size[0], output_size[1]));
  } else {
    const int64_t depth = x.size(2), plane = output_size[1] * output_size[2];
    const Tensor planes = minidl::adaptive_avg_pool2d(
        x.reshape({n, c * depth, x.size(3), x.size(4)}), Size2(output_size[1], output_size[2]));
    out = minidl::adaptive_avg_pool2d(planes.reshape({n, c, depth, plane}),
                                      Size2(output_size[0], plane))
              .reshape({n, c, output_size[0], output_size[1], output_size[2]});
  }
  return narrow ? out.to(input.dtype()) : out;
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  check_defined(input, "interpolate", "input");
  const InterpolateMode mode = options.mode();
  const char* name = interpolate_mode_name(mode);
  MINIDL_CHECK(input.dim() >= 3 && input.dim() <= 5, "interpolate: expected a 3-D [N, C, W], ",
               "4-D [N, C, H, W] or 5-D [N, C, D, H, W] input, got shape ", input.sizes());
  const int64_t needed_dims = mode == InterpolateMode::Linear      ? 3
                              : mode == InterpolateMode::Bilinear  ? 4
                              : mode == InterpolateMode::Bicubic   ? 4
                              : mode == InterpolateMode::Trilinear ? 5
                                                                   : input.dim();
  MINIDL_CHECK(input.dim() == needed_dims, "interpolate: got a ", input.dim(), "-D input of shape ",
               input.sizes(), ", but ", name, " mode needs a ", needed_dims, "-D input");
  const bool interpolating = mode == InterpolateMode::Linear || mode == InterpolateMode::Bilinear ||
                             mode == InterpolateMode::Bicubic || mode == InterpolateMode::Trilinear;
  MINIDL_CHECK(interpolating || !options.align_corners(), "interpolate: the align_corners option ",
               "can only be set with the interpolating modes (linear, bilinear, bicubic, ",
               "trilinear), not ", name);
  MINIDL_CHECK(
      !options.antialias() || mode == InterpolateMode::Bilinear || mode == InterpolateMode::Bicubic,
      "interpolate: antialias is only there for the bilinear and bicubic modes, not ", name);
  MINIDL_CHECK(options.size().has_value() != options.scale_factor().has_value(),
               options.size() ? "interpolate: only one of size or scale_factor should be given"
                              : "interpolate: either size or scale_factor should be given");
  const size_t spatial = static_cast<size_t>(input.dim() - 2);
  Shape output_size(spatial);
  InterpolateScales scales(spatial);
  if (options.size()) {
    const std::vector<int64_t>& size = *options.size();
    MINIDL_CHECK(size.size() == spatial || size.size() == 1, "interpolate: expected ", spatial,
                 " output sizes for an input of shape ", input.sizes(), ", got ", Shape(size));
    for (size_t d = 0; d < spatial; ++d) output_size[d] = size[size.size() == 1 ? 0 : d];
  } else {
    const std::vector<double>& factors = *options.scale_factor();
    MINIDL_CHECK(factors.size() == spatial || factors.size() == 1, "interpolate: expected ",
                 spatial, " scale factors for an input of shape ", input.sizes(), ", got ",
                 factors.size());
    for (size_t d = 0; d < spatial; ++d) {
      const double factor = factors[factors.size() == 1 ? 0 : d];
      MINIDL_CHECK(factor > 0, "interpolate: expected positive scale factors, got ", factor);
      // floor(in * factor) in double, as F.interpolate; the factor itself enters the source
      // positions unless recompute_scale_factor.
      output_size[d] = static_cast<int64_t>(
          std::floor(static_cast<double>(input.size(static_cast<int64_t>(d) + 2)) * factor));
      if (!options.recompute_scale_factor().value_or(false)) scales[d] = factor;
    }
  }
  const bool align_corners = options.align_corners().value_or(false);
  switch (mode) {
    case InterpolateMode::Nearest:
      return spatial == 1   ? upsample_nearest1d(input, output_size, scales)
             : spatial == 2 ? upsample_nearest2d(input, output_size, scales)
                            : upsample_nearest3d(input, output_size, scales);
    case InterpolateMode::NearestExact:
      return spatial == 1   ? upsample_nearest_exact1d(input, output_size, scales)
             : spatial == 2 ? upsample_nearest_exact2d(input, output_size, scales)
                            : upsample_nearest_exact3d(input, output_size, scales);
    case InterpolateMode::Linear:
      return upsample_linear1d(input, output_size, align_corners, scales);
    case InterpolateMode::Bilinear:
      return options.antialias() ? upsample_bilinear2d_aa(input, output_size, align_corners, scales)
                                 : upsample_bilinear2d(input, output_size, align_corners, scales);
    case InterpolateMode::Bicubic:
      return options.antialias() ? upsample_bicubic2d_aa(input, output_size, align_corners, scales)
                                 : upsample_bicubic2d(input, output_size, align_corners, scales);
    case InterpolateMode::Trilinear:
      return upsample_trilinear3d(input, output_size, align_corners, scales);
    case InterpolateMode::Area: return area_interpolate(input, output_size);
  }
  MINIDL_INTERNAL_ASSERT(false, "interpolate: unknown mode");
  return {};
}

}  // namespace minidl::nn::functional

namespace minidl {

const char* interpolate_mode_name(InterpolateMode mode) {
  switch (mode) {
    case InterpolateMode::Nearest: return "nearest";
    case InterpolateMode::NearestExact: return "nearest-exact";
    case InterpolateMode::Linear: return "linear";
    case InterpolateMode::Bilinear: return "bilinear";
    case InterpolateMode::Bicubic: return "bicubic";
    case InterpolateMode::Trilinear: return "trilinear";
    case InterpolateMode::Area: return "area";
  }
  return "unknown";
}

}  // namespace minidl
