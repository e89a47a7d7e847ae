#pragma once
// nn::Sigmoid: 1 / (1 + exp(-x)), element-wise, as torch::nn::Sigmoid. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};

MINIDL_MODULE(Sigmoid);

}  // namespace minidl::nn
