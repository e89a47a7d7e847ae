#pragma once
// Joining, gathering and encoding. The views themselves (view, reshape, transpose, permute,
// narrow, slice, squeeze, unsqueeze, flatten, expand) are Tensor methods, with free-function
// forms here for LibTorch familiarity.
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl {

Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);

// Joins tensors of equal shape except along `dim`.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins tensors of equal shape along a new dimension `dim`.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// The slices of x at `index` (1-D int64) along `dim`; backward scatters and adds.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// int64 [...] -> int64 [..., num_classes]; num_classes = -1 takes max + 1.
Tensor one_hot(const Tensor& labels, int64_t num_classes = -1);

}  // namespace minidl
