#pragma once
// Options of the pooling layers and their functional forms (the same structs serve both, as
// LibTorch's MaxPool2dFuncOptions is MaxPool2dOptions).
#include "minidl/core/arg.h"
#include "minidl/core/tensor_options.h"

namespace minidl::nn {

// The stride defaults to the kernel size (non-overlapping windows), as PyTorch's stride=None.
struct MaxPool2dOptions {
  MaxPool2dOptions(Size2 kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  MINIDL_ARG(Size2, kernel_size);
  MINIDL_ARG(Size2, stride);
  // Implicit -infinity padding on each side; at most half the kernel.
  MINIDL_ARG(Size2, padding) = 0;
};

struct AvgPool2dOptions {
  AvgPool2dOptions(Size2 kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  MINIDL_ARG(Size2, kernel_size);
  MINIDL_ARG(Size2, stride);
  // Implicit zero padding on each side; at most half the kernel.
  MINIDL_ARG(Size2, padding) = 0;
  // Whether padded positions count in the divisor of each window.
  MINIDL_ARG(bool, count_include_pad) = true;
};

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(Size2 output_size) : output_size_(output_size) {}
  MINIDL_ARG(Size2, output_size);
};

using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;

}  // namespace minidl::nn
