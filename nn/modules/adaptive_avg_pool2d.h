#pragma once
// nn::AdaptiveAvgPool2d: averages [N, C, H, W] over windows chosen so that the output is
// [N, C, output_size.h, output_size.w], as torch::nn::AdaptiveAvgPool2d; output size 1 is
// global average pooling. No parameters.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/pooling.h"

namespace minidl::nn {

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
