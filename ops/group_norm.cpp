// Group normalisation: validation, and forward and backward on layer_norm's kernels
// (ops/layer_norm_kernels.h). Note [Group norm on layer norm's kernels] says how.
#include "minidl/ops/group_norm.h"

#include <cmath>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/layer_norm_kernels.h"

// Note [Group norm on layer norm's kernels]
// A dense [N, C, *] input holds each (sample, group)'s values next to each other, so as a
// [N * num_groups, (C / num_groups) * prod(*)] matrix, group norm without its affine transform is
// layer norm of each row. layer_norm's kernels give that row's mean and rstd and x_hat; the
// per-channel affine transform is a broadcast product and sum. Backward, with g = dy * weight[c],
// the input's gradient has layer norm's row formula (layer_norm_math::input_grad), which the
// input-gradient kernel computes from g with no weight; the parameters' gradients are sums over
// all but the channel dim of dy * x_hat and dy, which minidl's reductions add in a fixed order.
// Everything runs in the accumulation dtype (float32 for 16-bit input), so the output is rounded
// to 16 bits once, as PyTorch's kernels do.

namespace minidl {

namespace {

constexpr const char* kOp = "group_norm";

DType acc_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

bool is_16_bit(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

// weight or bias: [C], on the input's device, of the input's dtype or (for 16-bit input) float32.
void check_parameter(const Tensor& t, const char* name, const Tensor& input) {
  if (!t.defined()) return;
  const int64_t channels = input.size(1);
  MINIDL_CHECK(t.dim() == 1 && t.size(0) == channels, kOp, ": expected ", name, " of shape [",
               channels, "] (the input's channels), got shape ", t.sizes());
  MINIDL_CHECK(t.device() == input.device(), kOp, ": expected ", name, " on ", input.device(),
               " like the input, got ", name, " on ", t.device());
  if (is_16_bit(input.dtype())) {
    MINIDL_CHECK(t.dtype() == input.dtype() || t.dtype() == kFloat32, kOp, ": expected ", name,
                 " of dtype ", input.dtype(), " or float32 (the input is ", input.dtype(),
                 "), got ", t.dtype());
  } else {
    MINIDL_CHECK(t.dtype() == input.dtype(), kOp, ": expected ", name, " of dtype ", input.dtype(),
                 " like the input, got ", t.dtype());
  }
}

void check_arguments(const Tensor& input, int64_t num_groups, const Tensor& weight,
                     const Tensor& bias, double eps) {
  check_defined(input, kOp, "input");
  MINIDL_CHECK(input.is_floating_point(), kOp, ": expected a floating-point input (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype());
  MINIDL_CHECK(input.dim() >= 2, kOp, ": expected an input of shape [N, C, *] (at least 2 dims), ",
               "got shape ", input.sizes());
  MINIDL_CHECK(num_groups > 0, kOp, ": expected a positive num_groups, got ", num_groups);
  MINIDL_CHECK(input.size(1) % num_groups == 0, kOp, ": expected the input's channels to be ",
               "divisible by num_groups, got input of shape ", input.sizes(),
               " (C = ", input.size(1), ") and num_groups = ", num_groups);
  check_parameter(weight, "weight", input);
  check_parameter(bias, "bias", input);
  MINIDL_CHECK(std::isfinite(eps) && eps >= 0.0, kOp, ": expected eps >= 0, got ", eps);
}

// `t` contiguous in dtype `acc` (undefined stays undefined).
Tensor as_acc(const Tensor& t, DType acc) {
  if (!t.defined()) return t;
  return t.to(acc).contiguous();
}

// A [C] tensor shaped to broadcast over dim 1 of an input with `dims` dims: [1, C, 1, ...].
Tensor per_channel(const Tensor& t, int64_t dims) {
  Shape shape(static_cast<size_t>(dims), 1);
  shape[1] = t.size(0);
  return t.view(shape);
}

// Every dim but the channels'.
Shape dims_but_channels(int64_t dims) {
  Shape result{0};
  for (int64_t d = 2; d < dims; ++d) result.push_back(d);
  return result;
}

// The channels-last layout a 4-D input keeps; everything else is contiguous.
MemoryFormat output_format(const Tensor& input) {
  return input.dim() == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
}

// What backward keeps, and which gradients it owes.
struct BackwardState {
  autograd::SavedTensor input;   // as given
  autograd::SavedTensor weight;  // Acc, contiguous; undefined without weight
  Tensor mean;                   // [N * num_groups], Acc
  Tensor rstd;                   // [N * num_groups], Acc
  layer_norm_math::RowLayout layout;
  int64_t num_groups;
  DType weight_dtype, bias_dtype;
  bool input_needs_grad, weight_needs_grad, bias_needs_grad;
};

// (x - mean) * rstd per (sample, group), of a dense Acc input.
Tensor normalized_input(const Tensor& x, const BackwardState& state) {
  const int64_t samples = x.size(0);
  const Shape group_stats{samples, state.num_groups, 1};
  return ((x.view({samples, state.num_groups, state.layout.cols}) - state.mean.view(group_stats)) *
          state.rstd.view(group_stats))
      .view(x.sizes());
}

std::vector<Tensor> group_norm_backward(const BackwardState& state, const Tensor& grad) {
  const Tensor& input = state.input.get();
  const DType acc = acc_dtype(input.dtype());
  const Tensor x = as_acc(input, acc);
  const Tensor dy = as_acc(grad, acc);
  const Tensor weight = state.weight.defined() ? state.weight.get() : Tensor();
  const bool any_elements = state.layout.numel() > 0;
  const int64_t dims = x.dim();
  Tensor grad_input, grad_weight, grad_bias;
  if (state.input_needs_grad) {
    grad_input = empty(x.sizes(), x.options());
    if (any_elements) {
      const Tensor g = weight.defined() ? (dy * per_channel(weight, dims)).contiguous() : dy;
      kernels_for<LayerNormKernels>(x.device())
          .layer_norm_backward_input(grad_input, g, x, state.mean, state.rstd, Tensor(),
                                     state.layout);
    }
    grad_input = grad_input.to(input.dtype()).contiguous(output_format(input));
  }
  // No elements: the sums are empty, so zero.
  if (state.weight_needs_grad)
    grad_weight =
        (dy * normalized_input(x, state)).sum(dims_but_channels(dims)).to(state.weight_dtype);
  if (state.bias_needs_grad) grad_bias = dy.sum(dims_but_channels(dims)).to(state.bias_dtype);
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (amp::AutocastCall cast{amp::AutocastOp::GroupNorm, {input, weight, bias}})
    return group_norm(cast[0], num_groups, cast[1], cast[2], eps);
  const ProfileScope profile(kOp);
  check_arguments(input, num_groups, weight, bias, eps);
  const DType acc = acc_dtype(input.dtype());
  const int64_t samples = input.size(0), dims = input.dim();
  Tensor out, mean, rstd, weight_acc;
  layer_norm_math::RowLayout layout{};
  {
    NoGradGuard no_grad;
    const Tensor x = as_acc(input, acc);
    weight_acc = as_acc(weight, acc);
    layout = {samples * num_groups,
              samples * num_groups == 0 ? 0 : x.numel() / (samples * num_groups)};
    const TensorOptions acc_options = TensorOptions(acc).device(x.device());
    mean = empty({layout.rows}, acc_options);
    rstd = empty({layout.rows}, acc_options);
    out = empty(x.sizes(), x.options());
    if (layout.numel() > 0)
      kernels_for<LayerNormKernels>(x.device())
          .layer_norm_forward(out, mean, rstd, x, Tensor(), Tensor(), layout, eps);
    if (weight_acc.defined()) out.mul_(per_channel(weight_acc, dims));
    if (bias.defined()) out.add_(per_channel(as_acc(bias, acc), dims));
    out = out.to(input.dtype()).contiguous(output_format(input));
  }

  if (autograd::needs_grad({input, weight, bias})) {
    BackwardState state{
        autograd::SavedTensor(input, kOp),
        weight_acc.defined() ? autograd::SavedTensor(weight_acc, kOp) : autograd::SavedTensor(),
        mean,
        rstd,
        layout,
        num_groups,
        weight.defined() ? weight.dtype() : acc,
        bias.defined() ? bias.dtype() : acc,
        input.requires_grad(),
        weight.defined() && weight.requires_grad(),
        bias.defined() && bias.requires_grad()};
    autograd::record(out, "GroupNormBackward", {input, weight, bias},
                     [state](const Tensor& grad) { return group_norm_backward(state, grad); });
  }
  return out;
}

}  // namespace minidl
