#pragma once
// CPU kernels for gathering and encoding (defined in ops/cpu/shape.cpp). All tensors are
// contiguous; x is viewed as [outer, x.size(dim), inner] around `dim`.
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// out [outer, index.numel(), inner] = x [outer, size, inner] at rows index[j] along dim.
// Every index must be in [0, size); a Error names the first that is not.
void index_select_kernel(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
// grad_x [outer, size, inner] += grad [outer, index.numel(), inner] scattered to rows index[j]
// (repeated indices add up). Indices are already checked by the forward.
void index_add_kernel(const Tensor& grad_x, const Tensor& grad, int64_t dim, const Tensor& index);
// out [labels.numel(), num_classes] (int64) = 1 at each label, 0 elsewhere. Every label must be
// in [0, num_classes); a Error names the first that is not.
void one_hot_kernel(const Tensor& out, const Tensor& labels, int64_t num_classes);

}  // namespace minidl::cpu
