#pragma once
// nn::AvgPool2d: the mean over each kernel_size window of [N, C, H, W], as
// torch::nn::AvgPool2d. The stride defaults to the kernel size. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/pooling.h"

namespace minidl::nn {

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(Size2 kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& options);
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  AvgPool2dOptions options;
};

MINIDL_MODULE(AvgPool2d);

}  // namespace minidl::nn
