#include "minidl/nn/modules/activation.h"

#include <ostream>

#include "minidl/nn/functional.h"

namespace minidl::nn {

Tensor ReLUImpl::forward(const Tensor& x) { return functional::relu(x); }

void ReLUImpl::pretty_print(std::ostream& out) const { out << "ReLU()"; }

Tensor GELUImpl::forward(const Tensor& x) { return functional::gelu(x, options); }

void GELUImpl::pretty_print(std::ostream& out) const {
  out << "GELU(approximate='" << options.approximate() << "')";
}

Tensor SigmoidImpl::forward(const Tensor& x) { return functional::sigmoid(x); }

void SigmoidImpl::pretty_print(std::ostream& out) const { out << "Sigmoid()"; }

Tensor TanhImpl::forward(const Tensor& x) { return functional::tanh(x); }

void TanhImpl::pretty_print(std::ostream& out) const { out << "Tanh()"; }

Tensor SiLUImpl::forward(const Tensor& x) { return functional::silu(x); }

void SiLUImpl::pretty_print(std::ostream& out) const { out << "SiLU()"; }

Tensor LeakyReLUImpl::forward(const Tensor& x) { return functional::leaky_relu(x, options); }

void LeakyReLUImpl::pretty_print(std::ostream& out) const {
  out << "LeakyReLU(negative_slope=" << options.negative_slope() << ")";
}

Tensor ELUImpl::forward(const Tensor& x) { return functional::elu(x, options); }

void ELUImpl::pretty_print(std::ostream& out) const {
  out << "ELU(alpha=" << options.alpha() << ")";
}

Tensor IdentityImpl::forward(const Tensor& x) { return x; }

void IdentityImpl::pretty_print(std::ostream& out) const { out << "Identity()"; }

}  // namespace minidl::nn
