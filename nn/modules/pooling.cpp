#include "minidl/nn/modules/pooling.h"

#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/modules/repr.h"

namespace minidl::nn {

MaxPool2dImpl::MaxPool2dImpl(const MaxPool2dOptions& options)
    : Module("MaxPool2d"), options(options) {}

Tensor MaxPool2dImpl::forward(const Tensor& x) { return functional::max_pool2d(x, options); }

void MaxPool2dImpl::pretty_print(std::ostream& out) const {
  out << "MaxPool2d(kernel_size=" << size2_repr(options.kernel_size())
      << ", stride=" << size2_repr(options.stride())
      << ", padding=" << size2_repr(options.padding()) << ")";
}

AvgPool2dImpl::AvgPool2dImpl(const AvgPool2dOptions& options)
    : Module("AvgPool2d"), options(options) {}

Tensor AvgPool2dImpl::forward(const Tensor& x) { return functional::avg_pool2d(x, options); }

void AvgPool2dImpl::pretty_print(std::ostream& out) const {
  out << "AvgPool2d(kernel_size=" << size2_repr(options.kernel_size())
      << ", stride=" << size2_repr(options.stride())
      << ", padding=" << size2_repr(options.padding());
  if (!options.count_include_pad()) out << ", count_include_pad=false";
  out << ")";
}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options)
    : Module("AdaptiveAvgPool2d"), options(options) {
  MINIDL_CHECK(options.output_size().h > 0 && options.output_size().w > 0,
               "AdaptiveAvgPool2d: expected a positive output_size, got ",
               size2_repr(options.output_size()));
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& x) {
  return functional::adaptive_avg_pool2d(x, options.output_size());
}

void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& out) const {
  out << "AdaptiveAvgPool2d(output_size=" << size2_repr(options.output_size()) << ")";
}

}  // namespace minidl::nn
