#include "minidl/nn/modules/avg_pool2d.h"

#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/modules/repr.h"

namespace minidl::nn {

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

}  // namespace minidl::nn
