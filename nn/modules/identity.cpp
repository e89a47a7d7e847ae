#include "minidl/nn/modules/identity.h"

#include <ostream>

namespace minidl::nn {

Tensor IdentityImpl::forward(const Tensor& x) { return x; }

void IdentityImpl::pretty_print(std::ostream& out) const { out << "Identity()"; }

}  // namespace minidl::nn
