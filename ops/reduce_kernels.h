#pragma once
// The kernel interface of the reductions (ops/reduce.cpp), implemented by ops/cpu/reduce.cpp
// and ops/cuda/reduce.cu with the math of ops/reduce_math.h; dispatched by kernels_for (Note
// [Kernel tables] in core/dispatch.h). Conventions:
// - Every input is contiguous and viewed as [outer, reduce, inner]: the reduced elements of
//   output (o, i) are input[o, 0..reduce, i] (Note [Reduction layout] in ops/reduce.cpp).
//   Outputs are contiguous [outer, inner] and are overwritten.
// - Each kernel merges partial results in a fixed order, without atomics, so results depend
//   neither on the number of CPU threads nor on timing.
// - CUDA kernels run on the current stream of the input's device and never synchronise the host.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

struct ReduceKernels {
  // out dtype: the input's for floating inputs, int64 for integer and bool inputs.
  void (*sum)(const Tensor& out, const Tensor& input);
  void (*mean)(const Tensor& out, const Tensor& input);  // floating inputs only
  void (*var)(const Tensor& out, const Tensor& input, int64_t correction);
  // values (input dtype) and indices (int64, along the reduced range); either may be undefined.
  // The index is that of the first extreme element; NaN counts as the extreme.
  void (*max)(const Tensor& values, const Tensor& indices, const Tensor& input);
  void (*min)(const Tensor& values, const Tensor& indices, const Tensor& input);
  // The backward of max/min: grad_input [outer, reduce, inner] is zeroed, then
  // grad_input[o, indices[o, i], i] = grad[o, i].
  void (*scatter_extreme_grad)(const Tensor& grad_input, const Tensor& grad, const Tensor& indices);

  static const ReduceKernels kCpu;
  static const ReduceKernels kCuda;
};

}  // namespace minidl
