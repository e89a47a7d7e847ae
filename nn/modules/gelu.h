#pragma once
// nn::GELU: x * Phi(x), the exact form (PyTorch's approximate='none'), element-wise, as torch::nn::GELU. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class GELUImpl : public Module {
 public:
  GELUImpl() : Module("GELU") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};

MINIDL_MODULE(GELU);

}  // namespace minidl::nn
