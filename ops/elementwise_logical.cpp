// Classification (isnan, isinf, isfinite) and logic (logical_not, logical_and, logical_or,
// logical_xor): bool results from operands of any dtype, never differentiable. The helpers are in
// ops/elementwise_op.h.
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
using elementwise::PredicateOp;

Tensor predicate(PredicateOp op, const Tensor& x, const char* name) {
  check_defined(x, name, "input");
  const ProfileScope profile(name, {x});
  Tensor out = empty_result(x.sizes(), TensorOptions(kBool).device(x.device()), {&x});
  if (out.numel() > 0) kernels_for<ElementwiseKernels>(out.device()).predicate(op, out, x);
  return out;
}

// Operands of two dtypes are each read as bool first (x != 0), as PyTorch reads them, so that the
// kernel sees one dtype.
Tensor logical(CompareOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_defined(a, name, "input");
  check_defined(b, name, "other");
  MINIDL_CHECK(a.device() == b.device(), name, ": expected both operands on the same device, got ",
               a.device(), " and ", b.device());
  if (a.dtype() != b.dtype()) return logical(op, ne(a, 0.0), ne(b, 0.0), name);
  const ProfileScope profile(name, {a, b});
  const Shape sizes = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty_result(sizes, TensorOptions(kBool).device(a.device()), {&a, &b});
  if (out.numel() > 0)
    kernels_for<ElementwiseKernels>(out.device())
        .compare(op, out, expand_view(a, sizes), expand_view(b, sizes));
  return out;
}

}  // namespace

Tensor isnan(const Tensor& x) { return predicate(PredicateOp::IsNan, x, "isnan"); }
Tensor isinf(const Tensor& x) { return predicate(PredicateOp::IsInf, x, "isinf"); }
Tensor isfinite(const Tensor& x) { return predicate(PredicateOp::IsFinite, x, "isfinite"); }
Tensor logical_not(const Tensor& x) { return predicate(PredicateOp::LogicalNot, x, "logical_not"); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical(CompareOp::LogicalAnd, a, b, "logical_and");
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical(CompareOp::LogicalOr, a, b, "logical_or");
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return logical(CompareOp::LogicalXor, a, b, "logical_xor");
}

}  // namespace minidl
