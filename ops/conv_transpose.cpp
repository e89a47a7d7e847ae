// conv_transpose2d: validation, and forward and backward on conv2d's kernels
// (ops/conv_kernels.h). Note [Transposed convolution on conv2d's kernels] says how.
#include "minidl/ops/conv_transpose.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/conv_kernels.h"
#include "minidl/ops/flop_counter.h"
#include "minidl/ops/shape.h"

// Note [Transposed convolution on conv2d's kernels]
// A transposed convolution with weight w [C_in, C_out / groups, kH, kW] is the adjoint of the
// conv2d C that maps [N, C_out, H_out, W_out] to [N, C_in, H, W] with the same w read as conv2d's
// [C_out', C_in' / groups, kH, kW] (C_out' = C_in, C_in' = C_out) and the same stride, padding,
// dilation and groups. So, with conv2d's kernels:
// - forward:          y  = conv2d_backward(grad_output = x, input sizes = y's).input
// - input gradient:   dx = conv2d_forward(dy, w)
// - weight gradient:  dw = conv2d_backward(grad_output = x, input = dy).weight
// - bias gradient:    db = dy summed over N, H_out and W_out.
// C maps H_out back to H' = (H_out + 2p - d(kH - 1) - 1) / s + 1 = H + output_padding / s rows.
// That is H unless output_padding >= stride (allowed when dilation > stride); then x is extended
// by zero rows (columns) to H' for the kernels, which changes nothing of y, and dx drops them.

namespace minidl {

namespace {

constexpr const char* kOp = "conv_transpose2d";

// "(2, 1)": a Size2 as the error messages print it.
std::string size2_str(Size2 value) {
  std::ostringstream out;
  out << '(' << value.h << ", " << value.w << ')';
  return out.str();
}

// The transposed convolution's geometry; `conv` is that of the conv2d it is the adjoint of.
struct TransposedGeometry {
  Conv2dParams conv;
  Size2 output_padding;
};

void check_dtype_and_device(const Tensor& input, const Tensor& other, const char* name) {
  MINIDL_CHECK(other.dtype() == input.dtype(), kOp, ": expected input, weight and bias of one ",
               "dtype, got input ", input.dtype(), " and ", name, " ", other.dtype());
  MINIDL_CHECK(other.device() == input.device(), kOp, ": expected input, weight and bias on one ",
               "device, got input on ", input.device(), " and ", name, " on ", other.device());
}

void check_arguments(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const TransposedGeometry& geometry) {
  check_defined(input, kOp, "input");
  check_defined(weight, kOp, "weight");
  MINIDL_CHECK(input.dim() == 4, kOp, ": expected a 4-D input [N, C_in, H, W], got shape ",
               input.sizes());
  MINIDL_CHECK(weight.dim() == 4, kOp, ": expected a 4-D weight [C_in, C_out / groups, kH, kW], ",
               "got shape ", weight.sizes());
  check_dtype_and_device(input, weight, "weight");
  if (bias.defined()) check_dtype_and_device(input, bias, "bias");
  MINIDL_CHECK(input.is_floating_point(), kOp, ": expected floating-point tensors (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype());

  const Conv2dParams& p = geometry.conv;
  const Size2 output_padding = geometry.output_padding;
  MINIDL_CHECK(p.groups >= 1, kOp, ": expected groups >= 1, got ", p.groups);
  const int64_t in_channels = input.size(1);
  MINIDL_CHECK(weight.size(0) == in_channels, kOp, ": channel mismatch: input of shape ",
               input.sizes(), " has C_in = ", in_channels, ", but weight of shape ", weight.sizes(),
               " expects weight.size(0) = C_in");
  MINIDL_CHECK(in_channels % p.groups == 0, kOp, ": groups = ", p.groups, " must divide the ",
               "input channels C_in = ", in_channels, " (input shape ", input.sizes(), ")");
  const int64_t out_channels = weight.size(1) * p.groups;
  MINIDL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels), kOp,
               ": expected a bias of shape [", out_channels, "] (weight.size(1) * groups), got ",
               "shape ", bias.sizes());
  MINIDL_CHECK(weight.size(2) > 0 && weight.size(3) > 0, kOp, ": expected a kernel of positive ",
               "size, got weight shape ", weight.sizes());
  MINIDL_CHECK(p.stride.h > 0 && p.stride.w > 0, kOp, ": expected a positive stride, got ",
               size2_str(p.stride));
  MINIDL_CHECK(p.dilation.h > 0 && p.dilation.w > 0, kOp, ": expected a positive dilation, got ",
               size2_str(p.dilation));
  MINIDL_CHECK(p.padding.h >= 0 && p.padding.w >= 0, kOp, ": expected a non-negative padding, ",
               "got ", size2_str(p.padding));
  MINIDL_CHECK(output_padding.h >= 0 && output_padding.w >= 0, kOp, ": expected a non-negative ",
               "output_padding, got ", size2_str(output_padding));
  // PyTorch's rule and words.
  MINIDL_CHECK(output_padding.h < std::max(p.stride.h, p.dilation.h) &&
                   output_padding.w < std::max(p.stride.w, p.dilation.w),
               kOp, ": output padding must be smaller than either stride or dilation, but got ",
               "output_padding ", size2_str(output_padding), ", stride ", size2_str(p.stride),
               " and dilation ", size2_str(p.dilation));
  const Shape out_sizes = conv_transpose2d_output_sizes(
      input.sizes(), weight.sizes(), p.groups, p.stride, p.padding, output_padding, p.dilation);
  MINIDL_CHECK(out_sizes[2] > 0 && out_sizes[3] > 0, kOp, ": given input size per channel (",
               input.size(2), " x ", input.size(3), "), the calculated output size per channel (",
               out_sizes[2], " x ", out_sizes[3], ") is too small (weight shape ", weight.sizes(),
               ", padding ", size2_str(p.padding), ")");
}

// Nothing to multiply: no samples, no input channels or no output channels (cuDNN rejects such
// shapes), answered here for both devices.
bool is_degenerate(const Tensor& input, const Tensor& weight) {
  return input.size(0) == 0 || input.size(1) == 0 || weight.size(1) == 0;
}

// The zero rows and columns x needs at its end to be the full output of the adjoint conv2d
// (Note [Transposed convolution on conv2d's kernels]).
Size2 input_extension(const TransposedGeometry& geometry) {
  return {geometry.output_padding.h / geometry.conv.stride.h,
          geometry.output_padding.w / geometry.conv.stride.w};
}

Tensor extended_input(const Tensor& input, const TransposedGeometry& geometry) {
  const Size2 extension = input_extension(geometry);
  if (extension == Size2(0)) return input;
  NoGradGuard no_grad;
  return pad(input, {0, extension.w, 0, extension.h});
}

Tensor forward_on_device(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const TransposedGeometry& geometry, const Shape& out_sizes) {
  const MemoryFormat format = input.suggest_memory_format();
  Tensor out;
  if (is_degenerate(input, weight)) {
    out = empty(out_sizes, input.options(), format).zero_();
  } else {
    // The kernels read only the sizes, dtype, device and layout of conv2d's "input" when they
    // compute its gradient alone: this one is where the output's sizes and layout come from.
    const Tensor output_shape = empty(out_sizes, input.options(), format);
    out = kernels_for<ConvKernels>(input.device())
              .conv2d_backward(extended_input(input, geometry), output_shape, weight, geometry.conv,
                               Conv2dGradRequest{.input = true})
              .input;
  }
  if (bias.defined()) out.add_(bias.view({1, bias.size(0), 1, 1}));
  return out;
}

struct BackwardState {
  autograd::SavedTensor input;
  autograd::SavedTensor weight;
  TransposedGeometry geometry;
  bool input_needs_grad, weight_needs_grad, bias_needs_grad;
};

std::vector<Tensor> conv_transpose2d_backward(const BackwardState& state, const Tensor& grad) {
  const Tensor input = state.input.get(), weight = state.weight.get();
  Tensor grad_input, grad_weight, grad_bias;
  if (is_degenerate(input, weight)) {
    if (state.input_needs_grad) grad_input = zeros(input.sizes(), input.options());
    if (state.weight_needs_grad) grad_weight = zeros(weight.sizes(), weight.options());
  } else {
    const ConvKernels& kernels = kernels_for<ConvKernels>(input.device());
    if (state.input_needs_grad) {
      grad_input = kernels.conv2d_forward(grad, weight, Tensor(), state.geometry.conv);
      if (grad_input.size(2) != input.size(2) || grad_input.size(3) != input.size(3))
        grad_input = grad_input.narrow(2, 0, input.size(2)).narrow(3, 0, input.size(3));
      grad_input = grad_input.contiguous(input.suggest_memory_format());
    }
    if (state.weight_needs_grad)
      grad_weight = kernels
                        .conv2d_backward(extended_input(input, state.geometry), grad, weight,
                                         state.geometry.conv, Conv2dGradRequest{.weight = true})
                        .weight;
  }
  if (state.bias_needs_grad) grad_bias = grad.sum({0, 2, 3});
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

Shape conv_transpose2d_output_sizes(const Shape& input_sizes, const Shape& weight_sizes,
                                    int64_t groups, Size2 stride, Size2 padding,
                                    Size2 output_padding, Size2 dilation) {
  auto out_size = [](int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                     int64_t output_padding, int64_t dilation) {
    return (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1;
  };
  return {
      input_sizes[0], weight_sizes[1] * groups,
      out_size(input_sizes[2], weight_sizes[2], stride.h, padding.h, output_padding.h, dilation.h),
      out_size(input_sizes[3], weight_sizes[3], stride.w, padding.w, output_padding.w, dilation.w)};
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride,
                        Size2 padding, Size2 output_padding, int64_t groups, Size2 dilation) {
  if (amp::AutocastCall cast{amp::AutocastOp::ConvTranspose2d, {input, weight, bias}})
    return conv_transpose2d(cast[0], cast[1], cast[2], stride, padding, output_padding, groups,
                            dilation);
  const ProfileScope profile(kOp, {input, weight, bias});
  const TransposedGeometry geometry{Conv2dParams{stride, padding, dilation, groups},
                                    output_padding};
  check_arguments(input, weight, bias, geometry);
  const Shape out_sizes = conv_transpose2d_output_sizes(input.sizes(), weight.sizes(), groups,
                                                        stride, padding, output_padding, dilation);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = forward_on_device(input, weight, bias, geometry, out_sizes);
  }
  count_flops(2 * input.numel() * weight.size(1) * weight.size(2) * weight.size(3));
  if (autograd::needs_grad({input, weight, bias})) {
    // As conv2d's: each of input and weight is read by the other's gradient.
    BackwardState state{autograd::SavedTensor(input, kOp),
                        autograd::SavedTensor(weight, kOp),
                        geometry,
                        input.requires_grad(),
                        weight.requires_grad(),
                        bias.defined() && bias.requires_grad()};
    autograd::record(
        out, "ConvTranspose2dBackward", {input, weight, bias},
        [state](const Tensor& grad) { return conv_transpose2d_backward(state, grad); });
  }
  return out;
}

}  // namespace minidl
