#pragma once
// CUDA launchers for the reductions (defined in ops/cuda/reduce.cu), with the conventions of
// ops/cpu/reduce.h: input contiguous [outer, reduce, inner], outputs contiguous [outer, inner],
// overwritten. All run on the current stream of the input's device and never synchronise the
// host. Results do not depend on timing (no atomics).
#include "minidl/core/tensor.h"

namespace minidl::cuda {

// out dtype: the input's for floating inputs, int64 for integer and bool inputs.
void sum_kernel(const Tensor& out, const Tensor& input);
void mean_kernel(const Tensor& out, const Tensor& input);  // floating inputs only
void var_kernel(const Tensor& out, const Tensor& input, int64_t correction);
// values (input dtype) and indices (int64, along the reduced range); either may be undefined.
void max_kernel(const Tensor& values, const Tensor& indices, const Tensor& input);
void min_kernel(const Tensor& values, const Tensor& indices, const Tensor& input);
// grad_input [outer, reduce, inner] is zeroed, then grad_input[o, indices[o, i], i] = grad[o, i].
void scatter_extreme_grad_kernel(const Tensor& grad_input, const Tensor& grad,
                                 const Tensor& indices);

}  // namespace minidl::cuda
