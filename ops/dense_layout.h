#pragma once
// Whether a tensor's elements can be walked as one flat array.
#include "minidl/core/tensor.h"

namespace minidl {

// True when `t`'s elements fill a storage span of exactly numel() elements, each once: a
// permutation of a row-major layout (transposed, channels-last). Such a tensor can be walked as
// a flat array (the CPU element-wise loop does), and an element-wise result may take its layout
// (ops/elementwise_op.cpp).
bool is_non_overlapping_and_dense(const Tensor& t);

}  // namespace minidl
