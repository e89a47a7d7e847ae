#pragma once
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// dst[i] = convert(src[i]) for every element; src has dst's shape (possibly a broadcast view).
void copy_kernel(const Tensor& dst, const Tensor& src);
void fill_kernel(const Tensor& dst, double value);

}  // namespace minidl::cpu
