#pragma once
// nn::MaxPool2d: the maximum over each kernel_size window of [N, C, H, W], as
// torch::nn::MaxPool2d. The stride defaults to the kernel size. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/pooling.h"

namespace minidl::nn {

class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(Size2 kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions& options);
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  MaxPool2dOptions options;
};

MINIDL_MODULE(MaxPool2d);

}  // namespace minidl::nn
