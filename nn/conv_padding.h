#pragma once
// How a convolution's padding (nn/options/conv.h: a number per side, kValid or kSame) becomes
// elements around the input.
#include <cstdint>
#include <vector>

#include "minidl/core/tensor_options.h"
#include "minidl/nn/options/conv.h"

namespace minidl::nn {

// F::pad's amounts for the spatial dims, the last dim first, before and after each (PyTorch's
// _reversed_padding_repeated_twice). kSame puts dilation * (kernel - 1) / 2 before and the rest
// after, and needs a stride of 1 (an error naming `op` otherwise).
std::vector<int64_t> conv_pad_amounts(const Conv2dPadding& padding, Size2 kernel, Size2 stride,
                                      Size2 dilation, const char* op);
std::vector<int64_t> conv_pad_amounts(const Conv1dPadding& padding, int64_t kernel, int64_t stride,
                                      int64_t dilation, const char* op);

// Whether each dim gets as many elements before as after: the convolution then pads itself.
bool symmetric(const std::vector<int64_t>& amounts);

}  // namespace minidl::nn
