#pragma once
// nn::Tanh: tanh(x), element-wise, as torch::nn::Tanh. No parameters.
#include <iosfwd>

#include "core/tensor.h"
#include "nn/module.h"
#include "nn/module_holder.h"

namespace minidl::nn {

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};

MINIDL_MODULE(Tanh);

}  // namespace minidl::nn
