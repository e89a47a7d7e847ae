#pragma once
// What every element-wise op does around its kernel: the argument checks, the result's layout,
// broadcasting views and the forward passes without autograd. Shared by the element-wise op
// files (ops/elementwise_unary.cpp, ops/elementwise_arithmetic.cpp,
// ops/elementwise_comparison.cpp); internal, not part of the public API.
//
// Binary ops broadcast: the kernels receive every operand viewed with the result's shape (zero
// strides on broadcast dimensions), and backward sums a broadcast input's gradient back to its
// shape (sum_to). Backward closures run under the engine's NoGradGuard, so the ops they call
// record nothing.
#include <initializer_list>

#include "minidl/core/scalar.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise_math.h"

namespace minidl::elementwise {

// ---- checks ----
// Ops run these before touching their operands, and each begins with check_defined, so an
// undefined operand is reported with the op's name: `input` is the first operand, `other` the
// second (as in PyTorch's signatures).

void check_floating(const Tensor& x, const char* op);
void check_numeric(const Tensor& x, const char* op);
// For the kernels' own callers, after promotion (the ops that promote call promote_operands).
void check_same_dtype_and_device(const Tensor& a, const Tensor& b, const char* op);
// add's and sub's alpha on an integer tensor must be integral.
void check_scalar_fits(const Tensor& x, double value, const char* op);
// An in-place op's target must hold result_type(self, scalar): an int64 tensor's add_(0.5) or
// mul_(2.0) is an error, as in PyTorch.
void check_inplace_scalar(const Tensor& self, const Scalar& scalar, const char* op);

// ---- type promotion (core/type_promotion.h) ----

// Both operands checked (defined, one device) and converted to their result_type, as PyTorch's
// binary ops do. The conversion (to()) is differentiable, so each input's gradient comes back
// in its own dtype.
struct Operands {
  Tensor a, b;
};
Operands promote_operands(const Tensor& a, const Tensor& b, const char* op);
// `x` converted to result_type(x, scalar): an integer or bool tensor with a floating-point
// scalar becomes float32, a bool tensor with an integer scalar int64.
Tensor promoted_for(const Tensor& x, const Scalar& scalar, const char* op);
// The scalar as a 0-dimensional tensor of result_type(x, scalar) on x's device, for the ops that
// take a scalar operand as a tensor (fmod, remainder, where, clamp's bounds).
Tensor scalar_operand(const Tensor& x, const Scalar& scalar);

// ---- results and operands ----

// A result of shape `sizes`. It takes the layout of the first operand that has that shape and
// a dense layout (transposed, channels-last), as PyTorch does, so element-wise ops keep their
// input's memory format; otherwise it is row-major.
Tensor empty_result(const Shape& sizes, TensorOptions options,
                    std::initializer_list<const Tensor*> operands);

// `t` viewed with the shape `sizes` it broadcasts to; no autograd (kernels only read it).
Tensor expand_view(const Tensor& t, const Shape& sizes);

// ---- forward passes: a new result from the kernel (no checks, no autograd) ----
// `name` names the op in a broadcasting error and in a profile (core/profiler.h); `scalars` are
// the op's scalar operands, if any.

Tensor unary_forward(UnaryOp op, const Tensor& x, const char* name, Scalars scalars = {});
Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      Scalars scalars = {});
Tensor ternary_forward(TernaryOp op, const Tensor& a, const Tensor& b, const Tensor& c,
                       const char* name);

}  // namespace minidl::elementwise
