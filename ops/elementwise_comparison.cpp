// Comparisons (eq, ne, lt, le, gt, ge; bool results, never differentiable) and where, the
// selection by a bool condition. The helpers are in ops/elementwise_op.h.
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/elementwise_kernels.h"
#include "minidl/ops/elementwise_op.h"

namespace minidl {

namespace {

using elementwise::CompareOp;
using elementwise::empty_result;
using elementwise::expand_view;

Tensor compare(CompareOp op, const Tensor& input, const Tensor& other, const char* name) {
  const ProfileScope profile(name, {input, other});
  const auto [a, b] = elementwise::promote_operands(input, other, name);
  const Shape sizes = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty_result(sizes, TensorOptions(kBool).device(a.device()), {&a, &b});
  if (out.numel() > 0)
    kernels_for<ElementwiseKernels>(out.device())
        .compare(op, out, expand_view(a, sizes), expand_view(b, sizes));
  return out;
}

// A floating tensor compares in its own type (the scalar rounded to it, as PyTorch's); an integer
// or bool one compares in double, which is where result_type's float32 would hold 2 < 2.5 too.
Tensor compare_scalar(CompareOp op, const Tensor& a, Scalar scalar, const char* name) {
  const ProfileScope profile(name, {a});
  check_defined(a, name, "input");
  const double value = scalar.to_double();
  Tensor out = empty_result(a.sizes(), TensorOptions(kBool).device(a.device()), {&a});
  if (out.numel() > 0)
    kernels_for<ElementwiseKernels>(out.device()).compare_scalar(op, out, a, value);
  return out;
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ge, a, b, "ge"); }
Tensor eq(const Tensor& a, Scalar b) { return compare_scalar(CompareOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, Scalar b) { return compare_scalar(CompareOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, Scalar b) { return compare_scalar(CompareOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, Scalar b) { return compare_scalar(CompareOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, Scalar b) { return compare_scalar(CompareOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, Scalar b) { return compare_scalar(CompareOp::Ge, a, b, "ge"); }

Tensor where(const Tensor& condition, const Tensor& input, const Tensor& other) {
  const ProfileScope profile("where", {condition, input, other});
  check_defined(condition, "where", "condition");
  const auto [a, b] = elementwise::promote_operands(input, other, "where");
  MINIDL_CHECK(condition.dtype() == kBool, "where: expected the condition to be a bool tensor, ",
               "got ", condition.dtype());
  MINIDL_CHECK(condition.device() == a.device(), "where: expected the condition on ", a.device(),
               " with the operands, got ", condition.device());
  const Shape sizes =
      broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes(), "where"), b.sizes(), "where");
  Tensor out = empty_result(sizes, a.options(), {&a, &b});
  if (out.numel() > 0)
    kernels_for<ElementwiseKernels>(out.device())
        .where(out, expand_view(condition, sizes), expand_view(a, sizes), expand_view(b, sizes));
  if (autograd::needs_grad({a, b})) {
    autograd::SavedTensor saved_condition(condition, "where");
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    const Shape& a_sizes = a.sizes();
    const Shape& b_sizes = b.sizes();
    autograd::record(
        out, "WhereBackward", {a, b},
        [saved_condition, a_needs_grad, b_needs_grad, a_sizes, b_sizes](const Tensor& grad) {
          const Tensor zero = zeros({}, grad.options());
          Tensor grad_a, grad_b;
          if (a_needs_grad) grad_a = sum_to(where(saved_condition.get(), grad, zero), a_sizes);
          if (b_needs_grad) grad_b = sum_to(where(saved_condition.get(), zero, grad), b_sizes);
          return std::vector<Tensor>{grad_a, grad_b};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// The scalar becomes a 0-dimensional tensor of the promoted dtype (result_type(tensor, scalar)),
// so that it is not rounded to a narrower dtype first.
Tensor where(const Tensor& condition, const Tensor& a, Scalar b) {
  check_defined(a, "where", "input");
  return where(condition, a, elementwise::scalar_operand(a, b));
}

Tensor where(const Tensor& condition, Scalar a, const Tensor& b) {
  check_defined(b, "where", "other");
  return where(condition, elementwise::scalar_operand(b, a), b);
}

}  // namespace minidl
