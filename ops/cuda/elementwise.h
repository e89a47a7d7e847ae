#pragma once
// CUDA launchers of the element-wise ops (ops/cuda/elementwise.cu). Each launches on the
// current stream of out's device and returns without waiting for the kernel.
//
// Every operand already has out's sizes: inputs may be broadcast views (zero strides) or any
// other strided layout; out may alias an input element for element (in-place ops). dtypes are
// as ops/elementwise.cpp checked them: inputs share one dtype T, out is T (bool for the
// comparisons), where's condition is bool.
#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise_math.h"

namespace minidl::cuda {

void unary_kernel(elementwise::UnaryOp op, const Tensor& out, const Tensor& x, double scalar);
void binary_kernel(elementwise::BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                   double scalar);
void ternary_kernel(elementwise::TernaryOp op, const Tensor& out, const Tensor& a,
                    const Tensor& b, const Tensor& c);
void compare_kernel(elementwise::CompareOp op, const Tensor& out, const Tensor& a,
                    const Tensor& b);
void compare_scalar_kernel(elementwise::CompareOp op, const Tensor& out, const Tensor& a,
                           double scalar);
void where_kernel(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b);

}  // namespace minidl::cuda
