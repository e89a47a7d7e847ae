#pragma once
// nn::ReLU: max(0, x), element-wise, as torch::nn::ReLU. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};

MINIDL_MODULE(ReLU);

}  // namespace minidl::nn
