#include "minidl/nn/modules/tanh.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

Tensor TanhImpl::forward(const Tensor& x) { return functional::tanh(x); }

void TanhImpl::pretty_print(std::ostream& out) const { out << "Tanh()"; }

}  // namespace minidl::nn
