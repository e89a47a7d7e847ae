#pragma once
// Options of nn::Conv2d, and of nn::functional::conv2d (the geometry without the channels).
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

}  // namespace minidl::nn
