// Layer normalisation: validation, dtype staging, dispatch to the kernels of
// ops/layer_norm_kernels.h, and backward. The math is in ops/layer_norm_math.h.
//
// The kernels see a contiguous [R, D] input and one accumulation dtype (Acc: float32, or float64
// for float64 input) for weight, bias, the per-row statistics and the parameters' gradients.
// Parameters of another dtype (bfloat16 weights under a bfloat16 input) are converted on the way
// in, and their gradients converted back.
#include "minidl/ops/layer_norm.h"

#include <cmath>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/layer_norm_kernels.h"

namespace minidl {

namespace {

constexpr const char* kOp = "layer_norm";

DType acc_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

bool is_16_bit(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

// weight or bias: of shape normalized_shape, on the input's device, of the input's dtype or (for
// 16-bit input) float32.
void check_parameter(const Tensor& t, const char* name, const Tensor& input,
                     const Shape& normalized_shape) {
  if (!t.defined()) return;
  MINIDL_CHECK(t.sizes() == normalized_shape, kOp, ": expected ", name, " of shape ",
               normalized_shape, " (normalized_shape), got shape ", t.sizes());
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

// Whether the last dims of `input` are `normalized_shape`.
bool ends_with(const Tensor& input, const Shape& normalized_shape) {
  const int64_t leading = input.dim() - static_cast<int64_t>(normalized_shape.size());
  if (leading < 0) return false;
  for (size_t i = 0; i < normalized_shape.size(); ++i)
    if (input.size(leading + static_cast<int64_t>(i)) != normalized_shape[i]) return false;
  return true;
}

void check_arguments(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                     const Tensor& bias, double eps) {
  check_defined(input, kOp, "input");
  MINIDL_CHECK(input.is_floating_point(), kOp, ": expected a floating-point input (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype());
  MINIDL_CHECK(!normalized_shape.empty(), kOp, ": expected a normalized_shape of at least one ",
               "dim, got []");
  MINIDL_CHECK(ends_with(input, normalized_shape), kOp, ": expected an input whose last dims are ",
               normalized_shape, " (normalized_shape), got shape ", input.sizes());
  check_parameter(weight, "weight", input, normalized_shape);
  check_parameter(bias, "bias", input, normalized_shape);
  MINIDL_CHECK(std::isfinite(eps) && eps >= 0.0, kOp, ": expected eps >= 0, got ", eps);
}

// `t` as the kernels want it: contiguous, of dtype `acc` (undefined stays undefined).
Tensor as_acc(const Tensor& t, DType acc) {
  if (!t.defined()) return t;
  NoGradGuard no_grad;
  return t.to(acc).contiguous();
}

// What backward keeps, and which gradients it owes.
struct BackwardState {
  autograd::SavedTensor input;   // contiguous
  autograd::SavedTensor weight;  // Acc, contiguous; undefined without weight
  Tensor mean;                   // [R], Acc
  Tensor rstd;                   // [R], Acc
  layer_norm_math::RowLayout layout;
  Shape normalized_shape;
  DType weight_dtype, bias_dtype;
  bool input_needs_grad, weight_needs_grad, bias_needs_grad;
};

std::vector<Tensor> layer_norm_backward(const BackwardState& state, const Tensor& grad) {
  const Tensor& x = state.input.get();
  const Tensor weight = state.weight.defined() ? state.weight.get() : Tensor();
  const layer_norm_math::RowLayout& layout = state.layout;
  const Tensor dy = grad.contiguous();
  const bool any_elements = layout.numel() > 0;
  const LayerNormKernels& kernels = kernels_for<LayerNormKernels>(x.device());
  Tensor grad_input;
  if (state.input_needs_grad) {
    grad_input = empty(x.sizes(), x.options());
    if (any_elements)
      kernels.layer_norm_backward_input(grad_input, dy, x, state.mean, state.rstd, weight, layout);
  }
  Tensor grad_weight, grad_bias;
  if (state.weight_needs_grad || state.bias_needs_grad) {
    // No rows: the sums are empty, so zero.
    const TensorOptions acc_options = TensorOptions(acc_dtype(x.dtype())).device(x.device());
    if (state.weight_needs_grad) grad_weight = zeros(state.normalized_shape, acc_options);
    if (state.bias_needs_grad) grad_bias = zeros(state.normalized_shape, acc_options);
    if (any_elements)
      kernels.layer_norm_backward_parameters(grad_weight, grad_bias, dy, x, state.mean, state.rstd,
                                             layout);
    if (grad_weight.defined()) grad_weight = grad_weight.to(state.weight_dtype);
    if (grad_bias.defined()) grad_bias = grad_bias.to(state.bias_dtype);
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (amp::AutocastCall cast{amp::AutocastOp::LayerNorm, {input, weight, bias}})
    return layer_norm(cast[0], normalized_shape, cast[1], cast[2], eps);
  const ProfileScope profile("layer_norm", {input, weight, bias});
  check_arguments(input, normalized_shape, weight, bias, eps);
  const DType acc = acc_dtype(input.dtype());
  Tensor x;
  {
    NoGradGuard no_grad;
    x = input.contiguous();
  }
  const Tensor weight_acc = as_acc(weight, acc), bias_acc = as_acc(bias, acc);
  const int64_t cols = shape_numel(normalized_shape);
  const layer_norm_math::RowLayout layout{cols == 0 ? 0 : x.numel() / cols, cols};
  const TensorOptions acc_options = TensorOptions(acc).device(x.device());
  Tensor mean = empty({layout.rows}, acc_options), rstd = empty({layout.rows}, acc_options);
  Tensor out = empty(x.sizes(), x.options());
  if (layout.numel() > 0)
    kernels_for<LayerNormKernels>(x.device())
        .layer_norm_forward(out, mean, rstd, x, weight_acc, bias_acc, layout, eps);

  if (autograd::needs_grad({input, weight, bias})) {
    BackwardState state{
        autograd::SavedTensor(x, kOp),
        weight_acc.defined() ? autograd::SavedTensor(weight_acc, kOp) : autograd::SavedTensor(),
        mean,
        rstd,
        layout,
        normalized_shape,
        weight.defined() ? weight.dtype() : acc,
        bias.defined() ? bias.dtype() : acc,
        input.requires_grad(),
        weight.defined() && weight.requires_grad(),
        bias.defined() && bias.requires_grad()};
    autograd::record(out, "LayerNormBackward", {input, weight, bias},
                     [state](const Tensor& grad) { return layer_norm_backward(state, grad); });
  }
  return out;
}

}  // namespace minidl
