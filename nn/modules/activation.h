#pragma once
// The activation modules, element-wise functions without parameters, as PyTorch's
// torch/nn/modules/activation.py (and flashlight's Activations.h) keep them together:
//
//   ReLU      max(0, x)
//   GELU      x * Phi(x), or its tanh approximation with approximate("tanh")
//   Sigmoid   1 / (1 + exp(-x))
//   Tanh      tanh(x)
//   SiLU      x * sigmoid(x) (also called swish)
//   LeakyReLU x for x > 0, negative_slope * x otherwise
//   ELU       x for x > 0, alpha * (exp(x) - 1) otherwise
//   Softplus  log(1 + exp(beta * x)) / beta, a smooth ReLU (x itself past the threshold)
//   Hardtanh  x clamped to [min_val, max_val]
//   Softmax   exp(x) / sum(exp(x)) along a dim; LogSoftmax its log, computed stably
//   Identity  x itself: a placeholder where a model sometimes has a layer and sometimes not
//
// Each is its torch::nn namesake; forward calls the nn::functional form.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/activation.h"

namespace minidl::nn {

class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};
MINIDL_MODULE(ReLU);

class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {}) : Module("GELU"), options(options) {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  GELUOptions options;
};
MINIDL_MODULE(GELU);

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};
MINIDL_MODULE(Sigmoid);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};
MINIDL_MODULE(Tanh);

class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};
MINIDL_MODULE(SiLU);

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {})
      : Module("LeakyReLU"), options(options) {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  LeakyReLUOptions options;
};
MINIDL_MODULE(LeakyReLU);

class ELUImpl : public Module {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : Module("ELU"), options(options) {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  ELUOptions options;
};
MINIDL_MODULE(ELU);

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {})
      : Module("Softplus"), options(options) {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  SoftplusOptions options;
};
MINIDL_MODULE(Softplus);

class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  HardtanhOptions options;
};
MINIDL_MODULE(Hardtanh);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(const SoftmaxOptions& options) : Module("Softmax"), options(options) {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  SoftmaxOptions options;
};
MINIDL_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options)
      : Module("LogSoftmax"), options(options) {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
  LogSoftmaxOptions options;
};
MINIDL_MODULE(LogSoftmax);

class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};
MINIDL_MODULE(Identity);

}  // namespace minidl::nn
