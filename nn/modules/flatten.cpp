#include "minidl/nn/modules/flatten.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

FlattenImpl::FlattenImpl(const FlattenOptions& options) : Module("Flatten"), options(options) {}

Tensor FlattenImpl::forward(const Tensor& x) {
  return functional::flatten(x, options.start_dim(), options.end_dim());
}

void FlattenImpl::pretty_print(std::ostream& out) const {
  out << "Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim() << ")";
}

}  // namespace minidl::nn
