#pragma once
// The loss modules, without parameters, as PyTorch's torch/nn/modules/loss.py keeps them
// together (their options are in nn/options/loss.h):
//
//   CrossEntropyLoss  softmax cross-entropy of logits [N, C] against int64 class indices [N];
//                     by default the mean over the batch
//   MSELoss           the squared difference of input and target, element-wise; by default
//                     the mean over all elements
//
// Each is its torch::nn namesake; forward calls the nn::functional form.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/loss.h"

namespace minidl::nn {

class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& logits, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  CrossEntropyLossOptions options;
};
MINIDL_MODULE(CrossEntropyLoss);

class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  MSELossOptions options;
};
MINIDL_MODULE(MSELoss);

}  // namespace minidl::nn
