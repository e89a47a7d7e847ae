#pragma once
// nn::CrossEntropyLoss: softmax cross-entropy of logits [N, C] against int64 class indices [N],
// as torch::nn::CrossEntropyLoss (mean over the batch by default). No parameters.
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

}  // namespace minidl::nn
