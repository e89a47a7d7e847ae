#include "minidl/ops/elementwise_op.h"

#include <cmath>

#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/core/type_promotion.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/dense_layout.h"
#include "minidl/ops/elementwise_kernels.h"

namespace minidl::elementwise {

void check_floating(const Tensor& x, const char* op) {
  check_defined(x, op, "input");
  MINIDL_CHECK(x.is_floating_point(), op, ": expected a floating-point tensor (float32, ",
               "float64, float16 or bfloat16), got ", x.dtype());
}

void check_numeric(const Tensor& x, const char* op) {
  check_defined(x, op, "input");
  MINIDL_CHECK(x.dtype() != kBool, op, ": expected a numeric tensor (float32, float64, float16, ",
               "bfloat16, int32, int64 or uint8), got bool");
}

void check_same_dtype_and_device(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  MINIDL_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, ",
               "got ", a.dtype(), " and ", b.dtype());
  MINIDL_CHECK(a.device() == b.device(), op, ": expected both operands on the same device, got ",
               a.device(), " and ", b.device());
}

Operands promote_operands(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  MINIDL_CHECK(a.device() == b.device(), op, ": expected both operands on the same device, got ",
               a.device(), " and ", b.device());
  const DType dtype = result_type(a, b);
  return {a.to(dtype), b.to(dtype)};
}

Tensor promoted_for(const Tensor& x, const Scalar& scalar, const char* op) {
  check_defined(x, op, "input");
  return x.to(result_type(x, scalar));
}

Tensor scalar_operand(const Tensor& x, const Scalar& scalar) {
  return full({}, scalar.to_double(), TensorOptions(result_type(x, scalar)).device(x.device()));
}

void check_inplace_scalar(const Tensor& self, const Scalar& scalar, const char* op) {
  const DType dtype = result_type(self, scalar);
  MINIDL_CHECK(can_cast(dtype, self.dtype()), op, ": the result type ", dtype, " (with the ",
               scalar.is_floating_point() ? "floating-point" : "integer", " scalar ",
               scalar.to_double(), ") cannot be written into this ", self.dtype(),
               " tensor (in-place ops keep the target's dtype); convert it with to() and use ",
               "the out-of-place op");
}

void check_scalar_fits(const Tensor& x, double value, const char* op) {
  MINIDL_CHECK(x.is_floating_point() || std::trunc(value) == value, op, ": the scalar ", value,
               " is not an integer and cannot be applied to a ", x.dtype(), " tensor (alpha ",
               "and in-place ops keep the tensor's dtype); convert the tensor to a floating-point ",
               "dtype first");
}

Tensor empty_result(const Shape& sizes, TensorOptions options,
                    std::initializer_list<const Tensor*> operands) {
  for (const Tensor* operand : operands) {
    if (operand->sizes() == sizes && !operand->is_contiguous() &&
        is_non_overlapping_and_dense(*operand))
      return empty_strided(sizes, operand->strides(), options);
  }
  return empty(sizes, options);
}

Tensor expand_view(const Tensor& t, const Shape& sizes) {
  if (t.sizes() == sizes) return t;
  return make_view(t, sizes, broadcast_strides(t, sizes), t.storage_offset());
}

// Each forward skips its kernel for an empty result: a CUDA launch needs at least one block.

Tensor unary_forward(UnaryOp op, const Tensor& x, const char* name, Scalars scalars) {
  const ProfileScope profile(name, {x});
  Tensor out = empty_result(x.sizes(), x.options(), {&x});
  if (out.numel() > 0) kernels_for<ElementwiseKernels>(out.device()).unary(op, out, x, scalars);
  return out;
}

Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      Scalars scalars) {
  const ProfileScope profile(name, {a, b});
  const Shape sizes = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty_result(sizes, a.options(), {&a, &b});
  if (out.numel() > 0)
    kernels_for<ElementwiseKernels>(out.device())
        .binary(op, out, expand_view(a, sizes), expand_view(b, sizes), scalars);
  return out;
}

Tensor ternary_forward(TernaryOp op, const Tensor& a, const Tensor& b, const Tensor& c,
                       const char* name) {
  const ProfileScope profile(name, {a, b, c});
  const Shape sizes =
      broadcast_shapes(broadcast_shapes(a.sizes(), b.sizes(), name), c.sizes(), name);
  Tensor out = empty_result(sizes, a.options(), {&a, &b, &c});
  if (out.numel() > 0)
    kernels_for<ElementwiseKernels>(out.device())
        .ternary(op, out, expand_view(a, sizes), expand_view(b, sizes), expand_view(c, sizes));
  return out;
}

}  // namespace minidl::elementwise
