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

Tensor SoftplusImpl::forward(const Tensor& x) { return functional::softplus(x, options); }

void SoftplusImpl::pretty_print(std::ostream& out) const {
  out << "Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options) : Module("Hardtanh"), options(options) {
  MINIDL_CHECK(options.max_val() > options.min_val(), "Hardtanh: expected max_val > min_val, ",
               "got min_val ", options.min_val(), " and max_val ", options.max_val());
}

Tensor HardtanhImpl::forward(const Tensor& x) { return functional::hardtanh(x, options); }

void HardtanhImpl::pretty_print(std::ostream& out) const {
  out << "Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val() << ")";
}

Tensor SoftmaxImpl::forward(const Tensor& x) { return functional::softmax(x, options.dim()); }

void SoftmaxImpl::pretty_print(std::ostream& out) const {
  out << "Softmax(dim=" << options.dim() << ")";
}

Tensor LogSoftmaxImpl::forward(const Tensor& x) {
  return functional::log_softmax(x, options.dim());
}

void LogSoftmaxImpl::pretty_print(std::ostream& out) const {
  out << "LogSoftmax(dim=" << options.dim() << ")";
}

Tensor IdentityImpl::forward(const Tensor& x) { return x; }

void IdentityImpl::pretty_print(std::ostream& out) const { out << "Identity()"; }

}  // namespace minidl::nn
