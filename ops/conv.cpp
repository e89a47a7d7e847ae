// conv2d: validation, dispatch to the kernels of ops/conv_kernels.h (im2col + OpenBLAS on the
// CPU, cuDNN on CUDA), and backward. The backends see only validated, non-degenerate convolutions:
// when the batch, the input channels or the output channels are zero, the result is computed here.
#include "minidl/ops/conv.h"

#include <atomic>
#include <sstream>
#include <string>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/conv_kernels.h"
#include "minidl/ops/flop_counter.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

std::atomic<bool> cudnn_deterministic_flag{false};
std::atomic<bool> cudnn_benchmark_flag{false};

// "(2, 1)": a Size2 as the error messages print it.
std::string size2_str(Size2 value) {
  std::ostringstream out;
  out << '(' << value.h << ", " << value.w << ')';
  return out.str();
}

void check_dtype_and_device(const Tensor& input, const Tensor& other, const char* name) {
  MINIDL_CHECK(other.dtype() == input.dtype(), "conv2d: expected input, weight and bias of one ",
               "dtype, got input ", input.dtype(), " and ", name, " ", other.dtype(),
               " (input shape ", input.sizes(), ", ", name, " shape ", other.sizes(), ")");
  MINIDL_CHECK(other.device() == input.device(), "conv2d: expected input, weight and bias on ",
               "one device, got input on ", input.device(), " and ", name, " on ", other.device(),
               " (input shape ", input.sizes(), ", ", name, " shape ", other.sizes(), ")");
}

void check_conv2d_arguments(const Tensor& input, const Tensor& weight, const Tensor& bias,
                            const Conv2dParams& params) {
  check_defined(input, "conv2d", "input");
  check_defined(weight, "conv2d", "weight");
  MINIDL_CHECK(input.dim() == 4, "conv2d: expected a 4-D input [N, C_in, H, W], got shape ",
               input.sizes());
  MINIDL_CHECK(weight.dim() == 4, "conv2d: wrong weight rank: expected a 4-D weight [C_out, ",
               "C_in / groups, kH, kW], got shape ", weight.sizes(), " (input shape ",
               input.sizes(), ")");
  check_dtype_and_device(input, weight, "weight");
  if (bias.defined()) check_dtype_and_device(input, bias, "bias");
  MINIDL_CHECK(input.is_floating_point(), "conv2d: expected floating-point tensors (float32, ",
               "float64, float16 or bfloat16), got ", input.dtype(), " (input shape ",
               input.sizes(), ")");

  const int64_t groups = params.groups;
  const int64_t in_channels = input.size(1), out_channels = weight.size(0);
  MINIDL_CHECK(groups >= 1, "conv2d: expected groups >= 1, got ", groups);
  MINIDL_CHECK(in_channels % groups == 0, "conv2d: groups = ", groups, " must divide the input ",
               "channels C_in = ", in_channels, " (input shape ", input.sizes(), ")");
  MINIDL_CHECK(out_channels % groups == 0, "conv2d: groups = ", groups, " must divide the ",
               "output channels C_out = ", out_channels, " (weight shape ", weight.sizes(), ")");
  MINIDL_CHECK(in_channels == weight.size(1) * groups, "conv2d: channel mismatch: input of shape ",
               input.sizes(), " has C_in = ", in_channels, ", but weight of shape ", weight.sizes(),
               " with groups = ", groups,
               " expects weight.size(1) * groups = ", weight.size(1) * groups);
  MINIDL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels),
               "conv2d: expected a bias of shape [", out_channels, "] (C_out of weight shape ",
               weight.sizes(), "), got shape ", bias.sizes());

  MINIDL_CHECK(params.stride.h > 0 && params.stride.w > 0, "conv2d: expected a positive ",
               "stride, got ", size2_str(params.stride));
  MINIDL_CHECK(params.dilation.h > 0 && params.dilation.w > 0, "conv2d: expected a positive ",
               "dilation, got ", size2_str(params.dilation));
  MINIDL_CHECK(params.padding.h >= 0 && params.padding.w >= 0, "conv2d: expected a ",
               "non-negative padding, got ", size2_str(params.padding));
  const int64_t padded_h = input.size(2) + 2 * params.padding.h;
  const int64_t padded_w = input.size(3) + 2 * params.padding.w;
  const int64_t dilated_kernel_h = params.dilation.h * (weight.size(2) - 1) + 1;
  const int64_t dilated_kernel_w = params.dilation.w * (weight.size(3) - 1) + 1;
  MINIDL_CHECK(weight.size(2) > 0 && weight.size(3) > 0, "conv2d: expected a kernel of ",
               "positive size, got weight shape ", weight.sizes());
  MINIDL_CHECK(dilated_kernel_h <= padded_h && dilated_kernel_w <= padded_w,
               "conv2d: kernel larger than the padded input: the (dilated) kernel is ",
               dilated_kernel_h, "x", dilated_kernel_w, " but the padded input is ", padded_h, "x",
               padded_w, " (input shape ", input.sizes(), ", weight shape ", weight.sizes(),
               ", padding ", size2_str(params.padding), ", dilation ", size2_str(params.dilation),
               ")");
}

// True when the convolution has no multiply-adds to do: no samples, no input channels or no
// output channels. cuDNN rejects such shapes, so these are answered here for both devices.
bool is_degenerate(const Tensor& input, const Tensor& weight) {
  return input.size(0) == 0 || input.size(1) == 0 || weight.size(0) == 0;
}

// The bias (or zeros) at every output position.
Tensor degenerate_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                          const Conv2dParams& params) {
  Tensor out = empty(conv2d_output_sizes(input.sizes(), weight.sizes(), params), input.options(),
                     input.suggest_memory_format());
  if (bias.defined()) return out.copy_(bias.view({1, bias.size(0), 1, 1}));
  return out.zero_();
}

Conv2dGrads degenerate_backward(const Tensor& grad_output, const Tensor& input,
                                const Tensor& weight, Conv2dGradRequest request) {
  Conv2dGrads grads;
  if (request.input) grads.input = zeros(input.sizes(), input.options());
  if (request.weight) grads.weight = zeros(weight.sizes(), weight.options());
  if (request.bias) grads.bias = sum(grad_output, {0, 2, 3});
  return grads;
}

Tensor forward_on_device(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const Conv2dParams& params) {
  if (is_degenerate(input, weight)) return degenerate_forward(input, weight, bias, params);
  return kernels_for<ConvKernels>(input.device()).conv2d_forward(input, weight, bias, params);
}

Conv2dGrads backward_on_device(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                               const Conv2dParams& params, Conv2dGradRequest request) {
  if (is_degenerate(input, weight)) return degenerate_backward(grad_output, input, weight, request);
  return kernels_for<ConvKernels>(input.device())
      .conv2d_backward(grad_output, input, weight, params, request);
}

}  // namespace

Shape conv2d_output_sizes(const Shape& input_sizes, const Shape& weight_sizes,
                          const Conv2dParams& params) {
  auto out_size = [](int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                     int64_t dilation) {
    return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
  };
  return {input_sizes[0], weight_sizes[0],
          out_size(input_sizes[2], weight_sizes[2], params.stride.h, params.padding.h,
                   params.dilation.h),
          out_size(input_sizes[3], weight_sizes[3], params.stride.w, params.padding.w,
                   params.dilation.w)};
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride,
              Size2 padding, Size2 dilation, int64_t groups) {
  if (amp::AutocastCall cast{amp::AutocastOp::Conv2d, {input, weight, bias}})
    return conv2d(cast[0], cast[1], cast[2], stride, padding, dilation, groups);
  const ProfileScope profile("conv2d", {input, weight, bias});
  const Conv2dParams params{stride, padding, dilation, groups};
  check_conv2d_arguments(input, weight, bias, params);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = forward_on_device(input, weight, bias, params);
  }
  count_flops(2 * out.numel() * weight.size(1) * weight.size(2) * weight.size(3));
  if (autograd::needs_grad({input, weight, bias})) {
    const Conv2dGradRequest request{input.requires_grad(), weight.requires_grad(),
                                    bias.defined() && bias.requires_grad()};
    // The input is needed for the weight's gradient and the weight for the input's; either is
    // also where the backward reads the other's shape and layout, so both are kept (as
    // PyTorch does). The output is never saved.
    autograd::SavedTensor saved_input(input, "conv2d");
    autograd::SavedTensor saved_weight(weight, "conv2d");
    autograd::record(out, "Conv2dBackward", {input, weight, bias},
                     [saved_input, saved_weight, params, request](const Tensor& grad) {
                       Conv2dGrads grads = backward_on_device(grad, saved_input.get(),
                                                              saved_weight.get(), params, request);
                       return std::vector<Tensor>{grads.input, grads.weight, grads.bias};
                     });
  }
  return out;
}

void set_cudnn_deterministic(bool deterministic) {
  cudnn_deterministic_flag.store(deterministic, std::memory_order_relaxed);
}

bool cudnn_deterministic() { return cudnn_deterministic_flag.load(std::memory_order_relaxed); }

void set_cudnn_benchmark(bool benchmark) {
  cudnn_benchmark_flag.store(benchmark, std::memory_order_relaxed);
}

bool cudnn_benchmark() { return cudnn_benchmark_flag.load(std::memory_order_relaxed); }

}  // namespace minidl
