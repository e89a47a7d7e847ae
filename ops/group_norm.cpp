// Group normalisation: validation, dispatch to the kernels of ops/group_norm_kernels.h, and
// backward. The math is in ops/group_norm_math.h and ops/layer_norm_math.h.
//
// The kernels see a contiguous [N, C, *] input of its own dtype and one accumulation dtype (Acc:
// float32, or float64 for float64 input) for weight, bias, the per-(sample, group) statistics
// and the parameters' gradients. Parameters of another dtype (bfloat16 weights under a bfloat16
// input) are converted on the way in, and their gradients converted back; a channels-last input
// is made contiguous for the kernels, and its output and gradient laid out channels-last again.
#include "minidl/ops/group_norm.h"

#include <cmath>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/group_norm_kernels.h"

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
  NoGradGuard no_grad;
  return t.to(acc).contiguous();
}

// The channels-last layout a 4-D input keeps; everything else is contiguous.
MemoryFormat output_format(const Tensor& input) {
  return input.dim() == 4 ? input.suggest_memory_format() : MemoryFormat::Contiguous;
}

// What backward keeps, and which gradients it owes.
struct BackwardState {
  autograd::SavedTensor input;   // contiguous
  autograd::SavedTensor weight;  // Acc, contiguous; undefined without weight
  Tensor mean;                   // [N * num_groups], Acc
  Tensor rstd;                   // [N * num_groups], Acc
  group_norm_math::GroupLayout layout;
  MemoryFormat format;  // the input's, which the input's gradient takes
  DType weight_dtype, bias_dtype;
  bool input_needs_grad, weight_needs_grad, bias_needs_grad;
};

std::vector<Tensor> group_norm_backward(const BackwardState& state, const Tensor& grad) {
  const Tensor& x = state.input.get();
  const Tensor weight = state.weight.defined() ? state.weight.get() : Tensor();
  const group_norm_math::GroupLayout& layout = state.layout;
  const Tensor dy = grad.contiguous();
  const bool any_elements = layout.numel() > 0;
  const GroupNormKernels& kernels = kernels_for<GroupNormKernels>(x.device());
  Tensor grad_input;
  if (state.input_needs_grad) {
    grad_input = empty(x.sizes(), x.options());
    if (any_elements)
      kernels.group_norm_backward_input(grad_input, dy, x, state.mean, state.rstd, weight, layout);
    grad_input = grad_input.contiguous(state.format);
  }
  Tensor grad_weight, grad_bias;
  if (state.weight_needs_grad || state.bias_needs_grad) {
    // No elements: the sums are empty, so zero.
    const TensorOptions acc_options = TensorOptions(acc_dtype(x.dtype())).device(x.device());
    if (state.weight_needs_grad) grad_weight = zeros({layout.channels}, acc_options);
    if (state.bias_needs_grad) grad_bias = zeros({layout.channels}, acc_options);
    if (any_elements)
      kernels.group_norm_backward_parameters(grad_weight, grad_bias, dy, x, state.mean, state.rstd,
                                             layout);
    if (grad_weight.defined()) grad_weight = grad_weight.to(state.weight_dtype);
    if (grad_bias.defined()) grad_bias = grad_bias.to(state.bias_dtype);
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (amp::AutocastCall cast{amp::AutocastOp::GroupNorm, {input, weight, bias}})
    return group_norm(cast[0], num_groups, cast[1], cast[2], eps);
  const ProfileScope profile(kOp, {input, weight, bias});
  check_arguments(input, num_groups, weight, bias, eps);
  const DType acc = acc_dtype(input.dtype());
  Tensor x;
  {
    NoGradGuard no_grad;
    x = input.contiguous();
  }
  const Tensor weight_acc = as_acc(weight, acc), bias_acc = as_acc(bias, acc);
  int64_t spatial = 1;
  for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  const group_norm_math::GroupLayout layout{x.size(0), x.size(1), num_groups, spatial};
  const TensorOptions acc_options = TensorOptions(acc).device(x.device());
  const int64_t rows = layout.rows().rows;
  Tensor mean = empty({rows}, acc_options), rstd = empty({rows}, acc_options);
  Tensor out = empty(x.sizes(), x.options());
  if (layout.numel() > 0)
    kernels_for<GroupNormKernels>(x.device())
        .group_norm_forward(out, mean, rstd, x, weight_acc, bias_acc, layout, eps);
  const MemoryFormat format = output_format(input);
  {
    NoGradGuard no_grad;
    out = out.contiguous(format);
  }

  if (autograd::needs_grad({input, weight, bias})) {
    BackwardState state{
        autograd::SavedTensor(x, kOp),
        weight_acc.defined() ? autograd::SavedTensor(weight_acc, kOp) : autograd::SavedTensor(),
        mean,
        rstd,
        layout,
        format,
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
