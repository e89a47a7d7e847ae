#pragma once
// nn::Conv2d: 2-D convolution over [N, C_in, H, W], as torch::nn::Conv2d (zero padding).
// weight [out_channels, in_channels / groups, kH, kW]; bias [out_channels] unless .bias(false).
// Initialised as PyTorch: weight kaiming_uniform_(a = sqrt(5)), i.e. uniform on
// [-1/sqrt(fan_in), 1/sqrt(fan_in)] with fan_in = in_channels / groups * kH * kW, and bias
// uniform on the same bounds.
#include <cstdint>
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/conv.h"

namespace minidl::nn {

class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);

  // x [N, in_channels, H, W] -> [N, out_channels, H_out, W_out]
  Tensor forward(const Tensor& x);
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  Conv2dOptions options;
  Tensor weight;  // [out_channels, in_channels / groups, kH, kW]
  Tensor bias;    // [out_channels], undefined without bias
};

MINIDL_MODULE(Conv2d);

}  // namespace minidl::nn
