#include "minidl/nn/modules/adaptive_avg_pool2d.h"

#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/modules/repr.h"

namespace minidl::nn {

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
