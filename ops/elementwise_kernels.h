#pragma once
// The kernel interface of the element-wise ops (ops/elementwise_*.cpp), implemented by
// ops/cpu/elementwise.cpp and ops/cuda/elementwise.cu with the functors of
// ops/elementwise_math.h; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// Every operand already has out's sizes: inputs may be broadcast views (zero strides) or any
// other strided layout; out may alias an input element for element (in-place ops). dtypes are
// as the op layer checked them: inputs share one dtype T, out is T (bool for the comparisons, the
// logical ops and the predicates), where's condition is bool. `scalars` are the op's scalar
// operands where it has any (see with_unary_functor). CUDA kernels launch on the current stream of
// out's device and return without waiting.
#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise_math.h"

namespace minidl {

struct ElementwiseKernels {
  void (*unary)(elementwise::UnaryOp op, const Tensor& out, const Tensor& x,
                elementwise::Scalars scalars);
  void (*binary)(elementwise::BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                 elementwise::Scalars scalars);
  void (*ternary)(elementwise::TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                  const Tensor& c);
  void (*compare)(elementwise::CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);
  void (*compare_scalar)(elementwise::CompareOp op, const Tensor& out, const Tensor& a,
                         double scalar);
  // isnan, isinf, isfinite, logical_not: x of any dtype, out bool.
  void (*predicate)(elementwise::PredicateOp op, const Tensor& out, const Tensor& x);
  void (*where)(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b);

  static const ElementwiseKernels kCpu;
  static const ElementwiseKernels kCuda;
};

}  // namespace minidl
