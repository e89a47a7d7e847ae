#include "minidl/nn/modules/relu.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

Tensor ReLUImpl::forward(const Tensor& x) { return functional::relu(x); }

void ReLUImpl::pretty_print(std::ostream& out) const { out << "ReLU()"; }

}  // namespace minidl::nn
