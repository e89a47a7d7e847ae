#pragma once
// The convolution layers, as LibTorch's (zero padding):
// - nn::Conv2d over [N, C_in, H, W]: weight [out_channels, in_channels / groups, kH, kW];
// - nn::Conv1d over [N, C_in, L]: weight [out_channels, in_channels / groups, k];
// - nn::ConvTranspose2d over [N, C_in, H, W]: weight [in_channels, out_channels / groups, kH, kW].
// Each has bias [out_channels] unless .bias(false). Initialised as PyTorch: weight
// kaiming_uniform_(a = sqrt(5)), i.e. uniform on [-1/sqrt(fan_in), 1/sqrt(fan_in)] with fan_in =
// weight.size(1) * the kernel's elements (in_channels / groups * kH * kW for Conv2d,
// out_channels / groups * kH * kW for ConvTranspose2d), and bias uniform on the same bounds.
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

class Conv1dImpl : public Module {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);

  // x [N, in_channels, L] -> [N, out_channels, L_out]
  Tensor forward(const Tensor& x);
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  Conv1dOptions options;
  Tensor weight;  // [out_channels, in_channels / groups, k]
  Tensor bias;    // [out_channels], undefined without bias
};

MINIDL_MODULE(Conv1d);

class ConvTranspose2dImpl : public Module {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);

  // x [N, in_channels, H, W] -> [N, out_channels, H_out, W_out] (ops/conv_transpose.h).
  Tensor forward(const Tensor& x);
  // The same with H_out and W_out the last two of output_size ([H, W] or [N, C, H, W]), as
  // PyTorch's forward(input, output_size): the output padding is chosen for it, in place of
  // options.output_padding(). A size the stride cannot give is an error naming the range.
  Tensor forward(const Tensor& x, const Shape& output_size);
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  ConvTranspose2dOptions options;
  Tensor weight;  // [in_channels, out_channels / groups, kH, kW]
  Tensor bias;    // [out_channels], undefined without bias

 private:
  void check_input(const Tensor& x) const;
  Tensor transpose_convolve(const Tensor& x, Size2 output_padding);
};

MINIDL_MODULE(ConvTranspose2d);

}  // namespace minidl::nn
