#pragma once
// NumPy broadcasting: shapes align on the right; each pair of sizes must be equal or one of
// them 1 (or missing).
#include "minidl/core/tensor.h"

namespace minidl {

// The shape `a` and `b` broadcast to; the error names `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides of `t` viewed with `sizes` it broadcasts to (0 on broadcast dimensions).
Shape broadcast_strides(const Tensor& t, const Shape& sizes);

// Sums `grad` over the dimensions along which a tensor of shape `shape` was broadcast, giving
// a tensor of exactly `shape` (the backward of broadcasting). Returns `grad` if shapes match.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace minidl
