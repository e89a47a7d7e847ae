#include "minidl/nn/modules/sigmoid.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

Tensor SigmoidImpl::forward(const Tensor& x) { return functional::sigmoid(x); }

void SigmoidImpl::pretty_print(std::ostream& out) const { out << "Sigmoid()"; }

}  // namespace minidl::nn
