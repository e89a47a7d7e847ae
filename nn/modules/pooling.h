#pragma once
// The pooling modules over [N, C, H, W], without parameters, as PyTorch's
// torch/nn/modules/pooling.py keeps them together (their options are in nn/options/pooling.h):
//
//   MaxPool2d          the maximum over each kernel_size window; stride defaults to kernel_size
//   AvgPool2d          the mean over each kernel_size window; stride defaults to kernel_size
//   AdaptiveAvgPool2d  the mean over windows chosen so that the output is
//                      [N, C, output_size.h, output_size.w]; output size 1 is global average
//                      pooling
//
// Each is its torch::nn namesake; forward calls the nn::functional form.
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

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(Size2 kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& options);
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  AvgPool2dOptions options;
};
MINIDL_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(Size2 output_size)
      : AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions(output_size)) {}
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options);
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& out) const override;

  AdaptiveAvgPool2dOptions options;
};
MINIDL_MODULE(AdaptiveAvgPool2d);

}  // namespace minidl::nn
