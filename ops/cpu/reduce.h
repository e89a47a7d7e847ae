#pragma once
// CPU reduction kernels. Every input is contiguous and viewed as [outer, reduce, inner]: the
// reduced elements of output (o, i) are input[o, 0..reduce, i]. Outputs are contiguous
// [outer, inner] and are overwritten. Results do not depend on the number of threads.
#include "minidl/core/tensor.h"

namespace minidl::cpu {

// out dtype: the input's for floating inputs, int64 for integer and bool inputs.
void sum_kernel(const Tensor& out, const Tensor& input);
void mean_kernel(const Tensor& out, const Tensor& input);  // floating inputs only
void var_kernel(const Tensor& out, const Tensor& input, int64_t correction);
// values (input dtype) and indices (int64, along the reduced range); either may be undefined.
// The index is that of the first extreme element; NaN counts as the extreme.
void max_kernel(const Tensor& values, const Tensor& indices, const Tensor& input);
void min_kernel(const Tensor& values, const Tensor& indices, const Tensor& input);
// The backward of max/min: grad_input [outer, reduce, inner] is zeroed, then
// grad_input[o, indices[o, i], i] = grad[o, i].
void scatter_extreme_grad_kernel(const Tensor& grad_input, const Tensor& grad,
                                 const Tensor& indices);

}  // namespace minidl::cpu
