#include "minidl/nn/modules/dropout.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

DropoutImpl::DropoutImpl(const DropoutOptions& options) : Module("Dropout"), options(options) {
  MINIDL_CHECK(options.p() >= 0 && options.p() <= 1,
               "Dropout: expected a probability p in [0, 1], got ", options.p());
}

Tensor DropoutImpl::forward(const Tensor& x) {
  return functional::dropout(x, DropoutFuncOptions().p(options.p()).training(is_training()));
}

void DropoutImpl::pretty_print(std::ostream& out) const {
  out << "Dropout(p=" << options.p() << ")";
}

}  // namespace minidl::nn
