#include "minidl/nn/modules/conv.h"

#include <cmath>
#include <ostream>
#include <sstream>
#include <vector>

#include "minidl/nn/conv_padding.h"
#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"
#include "minidl/nn/modules/repr.h"

namespace minidl::nn {

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : Module("Conv2d"), options(options) {
  const int64_t groups = options.groups();
  MINIDL_CHECK(options.in_channels() > 0 && options.out_channels() > 0,
               "Conv2d: expected positive in_channels and out_channels, got ",
               options.in_channels(), " and ", options.out_channels());
  MINIDL_CHECK(
      groups > 0 && options.in_channels() % groups == 0 && options.out_channels() % groups == 0,
      "Conv2d: expected in_channels (", options.in_channels(), ") and out_channels (",
      options.out_channels(), ") to be divisible by groups (", groups, ")");
  const Size2 kernel = options.kernel_size();
  MINIDL_CHECK(kernel.h > 0 && kernel.w > 0, "Conv2d: expected a positive kernel_size, got [",
               kernel.h, ", ", kernel.w, "]");
  // kSame with a stride is refused here already, as PyTorch's constructor does.
  (void)conv_pad_amounts(options.padding(), kernel, options.stride(), options.dilation(), "Conv2d");
  weight = register_parameter(
      "weight",
      empty({options.out_channels(), options.in_channels() / groups, kernel.h, kernel.w}));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

namespace {

// PyTorch's _ConvNd.reset_parameters: the weight kaiming_uniform_(a = sqrt(5)), the bias
// uniform on +-1/sqrt(fan_in) of the weight.
void reset_convolution_parameters(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).fan_in;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    init::uniform_(bias, -bound, bound);
  }
}

// The channel checks every convolution layer's constructor makes.
void check_channels(const char* module, int64_t in_channels, int64_t out_channels, int64_t groups) {
  MINIDL_CHECK(in_channels > 0 && out_channels > 0, module,
               ": expected positive in_channels and out_channels, got ", in_channels, " and ",
               out_channels);
  MINIDL_CHECK(groups > 0 && in_channels % groups == 0 && out_channels % groups == 0, module,
               ": expected in_channels (", in_channels, ") and out_channels (", out_channels,
               ") to be divisible by groups (", groups, ")");
}

// A layer's convolution of x, `convolve(input, padding)`, after padding_mode's padding when
// that is not zeros (which the convolution adds itself).
template <class Options, class Convolve>
Tensor convolve_padded(const Tensor& x, const Options& options, const char* module,
                       const Convolve& convolve) {
  if (options.padding_mode() == kZeros) return convolve(x, options.padding());
  const std::vector<int64_t> amounts = conv_pad_amounts(
      options.padding(), options.kernel_size(), options.stride(), options.dilation(), module);
  return convolve(minidl::pad(x, amounts, options.padding_mode()), kValid);
}

}  // namespace

void Conv2dImpl::reset_parameters() { reset_convolution_parameters(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == options.in_channels(), "Conv2d: expected input of ",
               "shape [N, ", options.in_channels(), " (in_channels), H, W], got ", x.sizes());
  return convolve_padded(x, options, "Conv2d", [&](const Tensor& input, const Conv2dPadding& p) {
    return functional::conv2d(input, weight, bias,
                              Conv2dFuncOptions()
                                  .stride(options.stride())
                                  .padding(p)
                                  .dilation(options.dilation())
                                  .groups(options.groups()));
  });
}

// As PyTorch's repr: Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=false)
void Conv2dImpl::pretty_print(std::ostream& out) const {
  out << "Conv2d(" << options.in_channels() << ", " << options.out_channels()
      << ", kernel_size=" << size2_repr(options.kernel_size())
      << ", stride=" << size2_repr(options.stride());
  out << conv_padding_repr(options.padding(), size2_repr(options.padding().extent()));
  if (options.dilation() != Size2(1)) out << ", dilation=" << size2_repr(options.dilation());
  if (options.groups() != 1) out << ", groups=" << options.groups();
  if (!options.bias()) out << ", bias=false";
  out << padding_mode_repr(options.padding_mode()) << ')';
}

}  // namespace minidl::nn

namespace minidl::nn {

Conv1dImpl::Conv1dImpl(const Conv1dOptions& options) : Module("Conv1d"), options(options) {
  check_channels("Conv1d", options.in_channels(), options.out_channels(), options.groups());
  MINIDL_CHECK(options.kernel_size() > 0, "Conv1d: expected a positive kernel_size, got ",
               options.kernel_size());
  (void)conv_pad_amounts(options.padding(), options.kernel_size(), options.stride(),
                         options.dilation(), "Conv1d");
  weight = register_parameter(
      "weight", empty({options.out_channels(), options.in_channels() / options.groups(),
                       options.kernel_size()}));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { reset_convolution_parameters(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 3 && x.size(1) == options.in_channels(), "Conv1d: expected input of ",
               "shape [N, ", options.in_channels(), " (in_channels), L], got ", x.sizes());
  return convolve_padded(x, options, "Conv1d", [&](const Tensor& input, const Conv1dPadding& p) {
    return functional::conv1d(input, weight, bias,
                              Conv1dFuncOptions()
                                  .stride(options.stride())
                                  .padding(p)
                                  .dilation(options.dilation())
                                  .groups(options.groups()));
  });
}

// As PyTorch's repr: Conv1d(3, 16, kernel_size=(3,), stride=(1,), padding=(1,), bias=false)
void Conv1dImpl::pretty_print(std::ostream& out) const {
  out << "Conv1d(" << options.in_channels() << ", " << options.out_channels() << ", kernel_size=("
      << options.kernel_size() << ",), stride=(" << options.stride() << ",)";
  std::ostringstream extent;  // "(1,)", as PyTorch prints a 1-tuple
  extent << '(' << options.padding().extent() << ",)";
  out << conv_padding_repr(options.padding(), extent.str());
  if (options.dilation() != 1) out << ", dilation=(" << options.dilation() << ",)";
  if (options.groups() != 1) out << ", groups=" << options.groups();
  if (!options.bias()) out << ", bias=false";
  out << padding_mode_repr(options.padding_mode()) << ')';
}

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& options)
    : Module("ConvTranspose2d"), options(options) {
  const int64_t groups = options.groups();
  check_channels("ConvTranspose2d", options.in_channels(), options.out_channels(), groups);
  const Size2 kernel = options.kernel_size();
  MINIDL_CHECK(kernel.h > 0 && kernel.w > 0, "ConvTranspose2d: expected a positive kernel_size, ",
               "got ", size2_repr(kernel));
  weight = register_parameter(
      "weight",
      empty({options.in_channels(), options.out_channels() / groups, kernel.h, kernel.w}));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

void ConvTranspose2dImpl::reset_parameters() { reset_convolution_parameters(weight, bias); }

Tensor ConvTranspose2dImpl::forward(const Tensor& x) {
  return transpose_convolve(x, options.output_padding());
}

Tensor ConvTranspose2dImpl::forward(const Tensor& x, const Shape& output_size) {
  check_input(x);
  MINIDL_CHECK(output_size.size() == 2 || output_size.size() == 4, "ConvTranspose2d: expected an ",
               "output_size of 2 sizes [H, W] (or 4, [N, C, H, W]), got ", output_size);
  const Shape requested(output_size.end() - 2, output_size.end());
  // As PyTorch's _output_padding: the smallest output, and up to stride - 1 more.
  const auto smallest = [&](int64_t input, int64_t stride, int64_t padding, int64_t kernel,
                            int64_t dilation) {
    return (input - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1;
  };
  const Size2 stride = options.stride(), padding = options.padding(),
              kernel = options.kernel_size(), dilation = options.dilation();
  const Shape low{smallest(x.size(2), stride.h, padding.h, kernel.h, dilation.h),
                  smallest(x.size(3), stride.w, padding.w, kernel.w, dilation.w)};
  const Shape high{low[0] + stride.h - 1, low[1] + stride.w - 1};
  MINIDL_CHECK(requested[0] >= low[0] && requested[0] <= high[0] && requested[1] >= low[1] &&
                   requested[1] <= high[1],
               "ConvTranspose2d: requested an output size of ", requested,
               ", but valid sizes range from ", low, " to ", high, " (for an input of ",
               Shape(x.sizes().end() - 2, x.sizes().end()), ")");
  return transpose_convolve(x, Size2(requested[0] - low[0], requested[1] - low[1]));
}

void ConvTranspose2dImpl::check_input(const Tensor& x) const {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == options.in_channels(), "ConvTranspose2d: expected ",
               "input of shape [N, ", options.in_channels(), " (in_channels), H, W], got ",
               x.sizes());
}

Tensor ConvTranspose2dImpl::transpose_convolve(const Tensor& x, Size2 output_padding) {
  check_input(x);
  return functional::conv_transpose2d(x, weight, bias,
                                      ConvTranspose2dFuncOptions()
                                          .stride(options.stride())
                                          .padding(options.padding())
                                          .output_padding(output_padding)
                                          .groups(options.groups())
                                          .dilation(options.dilation()));
}

// As PyTorch's repr: ConvTranspose2d(16, 8, kernel_size=(3, 3), stride=(2, 2),
// output_padding=(1, 1))
void ConvTranspose2dImpl::pretty_print(std::ostream& out) const {
  out << "ConvTranspose2d(" << options.in_channels() << ", " << options.out_channels()
      << ", kernel_size=" << size2_repr(options.kernel_size())
      << ", stride=" << size2_repr(options.stride());
  if (options.padding() != Size2(0)) out << ", padding=" << size2_repr(options.padding());
  if (options.output_padding() != Size2(0))
    out << ", output_padding=" << size2_repr(options.output_padding());
  if (options.dilation() != Size2(1)) out << ", dilation=" << size2_repr(options.dilation());
  if (options.groups() != 1) out << ", groups=" << options.groups();
  if (!options.bias()) out << ", bias=false";
  out << ')';
}

}  // namespace minidl::nn
