#pragma once
// Options of nn::Conv2d, nn::Conv1d and nn::ConvTranspose2d, and of their functional forms
// (the geometry without the channels).
#include <cstdint>

#include "minidl/core/arg.h"
#include "minidl/core/tensor_options.h"

namespace minidl::nn {

// Size2 fields take one number for both spatial dims or {h, w}: .stride(2), .padding({1, 0}).
struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(Size2, kernel_size);
  MINIDL_ARG(Size2, stride) = 1;
  // Zeros added on each side of the input.
  MINIDL_ARG(Size2, padding) = 0;
  MINIDL_ARG(Size2, dilation) = 1;
  // Channels are split into `groups` independent convolutions; both channel counts must be
  // divisible by it.
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(bool, bias) = true;
};

struct Conv2dFuncOptions {
  MINIDL_ARG(Size2, stride) = 1;
  MINIDL_ARG(Size2, padding) = 0;
  MINIDL_ARG(Size2, dilation) = 1;
  MINIDL_ARG(int64_t, groups) = 1;
};

// nn::Conv1d over [N, C_in, L]: one number per option.
struct Conv1dOptions {
  Conv1dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(int64_t, kernel_size);
  MINIDL_ARG(int64_t, stride) = 1;
  // Zeros added on each side of the input.
  MINIDL_ARG(int64_t, padding) = 0;
  MINIDL_ARG(int64_t, dilation) = 1;
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(bool, bias) = true;
};

struct Conv1dFuncOptions {
  MINIDL_ARG(int64_t, stride) = 1;
  MINIDL_ARG(int64_t, padding) = 0;
  MINIDL_ARG(int64_t, dilation) = 1;
  MINIDL_ARG(int64_t, groups) = 1;
};

// nn::ConvTranspose2d, in LibTorch's order of options.
struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(Size2, kernel_size);
  MINIDL_ARG(Size2, stride) = 1;
  // dilation * (kernel_size - 1) - padding zeros are added on each side of the input, as the
  // gradient of a conv2d with this padding.
  MINIDL_ARG(Size2, padding) = 0;
  // Rows and columns added to one side of the output; below max(stride, dilation).
  MINIDL_ARG(Size2, output_padding) = 0;
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(bool, bias) = true;
  MINIDL_ARG(Size2, dilation) = 1;
};

struct ConvTranspose2dFuncOptions {
  MINIDL_ARG(Size2, stride) = 1;
  MINIDL_ARG(Size2, padding) = 0;
  MINIDL_ARG(Size2, output_padding) = 0;
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(Size2, dilation) = 1;
};

}  // namespace minidl::nn
