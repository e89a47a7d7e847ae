#include "minidl/nn/modules/activation.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

Tensor ReLUImpl::forward(const Tensor& x) { return functional::relu(x); }

void ReLUImpl::pretty_print(std::ostream& out) const { out << "ReLU()"; }

Tensor GELUImpl::forward(const Tensor& x) { return functional::gelu(x); }

void GELUImpl::pretty_print(std::ostream& out) const { out << "GELU(approximate='none')"; }

Tensor SigmoidImpl::forward(const Tensor& x) { return functional::sigmoid(x); }

void SigmoidImpl::pretty_print(std::ostream& out) const { out << "Sigmoid()"; }

Tensor TanhImpl::forward(const Tensor& x) { return functional::tanh(x); }

void TanhImpl::pretty_print(std::ostream& out) const { out << "Tanh()"; }

Tensor IdentityImpl::forward(const Tensor& x) { return x; }

void IdentityImpl::pretty_print(std::ostream& out) const { out << "Identity()"; }

}  // namespace minidl::nn
