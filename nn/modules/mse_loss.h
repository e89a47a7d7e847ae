#pragma once
// nn::MSELoss: the squared difference of input and target, element-wise, as torch::nn::MSELoss
// (mean over all elements by default). No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/loss.h"

namespace minidl::nn {

class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  MSELossOptions options;
};

MINIDL_MODULE(MSELoss);

}  // namespace minidl::nn
