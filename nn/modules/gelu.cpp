#include "minidl/nn/modules/gelu.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

Tensor GELUImpl::forward(const Tensor& x) { return functional::gelu(x); }

void GELUImpl::pretty_print(std::ostream& out) const { out << "GELU(approximate='none')"; }

}  // namespace minidl::nn
