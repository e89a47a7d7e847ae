#pragma once
// nn::Identity: returns its input, as torch::nn::Identity; a placeholder where a model
// sometimes has a layer and sometimes does not. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;
};

MINIDL_MODULE(Identity);

}  // namespace minidl::nn
