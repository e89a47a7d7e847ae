#include "minidl/nn/modules/conv.h"

#include <cmath>
#include <ostream>

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
  weight = register_parameter(
      "weight",
      empty({options.out_channels(), options.in_channels() / groups, kernel.h, kernel.w}));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_channels()}));
  reset_parameters();
}

void Conv2dImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).fan_in;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2dImpl::forward(const Tensor& x) {
  MINIDL_CHECK(x.dim() == 4 && x.size(1) == options.in_channels(), "Conv2d: expected input of ",
               "shape [N, ", options.in_channels(), " (in_channels), H, W], got ", x.sizes());
  return functional::conv2d(x, weight, bias,
                            Conv2dFuncOptions()
                                .stride(options.stride())
                                .padding(options.padding())
                                .dilation(options.dilation())
                                .groups(options.groups()));
}

// As PyTorch's repr: Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=false)
void Conv2dImpl::pretty_print(std::ostream& out) const {
  out << "Conv2d(" << options.in_channels() << ", " << options.out_channels()
      << ", kernel_size=" << size2_repr(options.kernel_size())
      << ", stride=" << size2_repr(options.stride());
  if (options.padding() != Size2(0)) out << ", padding=" << size2_repr(options.padding());
  if (options.dilation() != Size2(1)) out << ", dilation=" << size2_repr(options.dilation());
  if (options.groups() != 1) out << ", groups=" << options.groups();
  if (!options.bias()) out << ", bias=false";
  out << ')';
}

}  // namespace minidl::nn
