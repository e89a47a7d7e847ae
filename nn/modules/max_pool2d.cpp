#include "minidl/nn/modules/max_pool2d.h"

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

}  // namespace minidl::nn
