// isclose, allclose and equal (see ops/closeness.h), written as PyTorch's composite
// at::isclose: the same ops in the same order, so 16-bit inputs round where PyTorch's do.
#include "minidl/ops/closeness.h"

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

void check_closeness_arguments(const Tensor& a, const Tensor& b, double rtol, double atol,
                               const char* op) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  MINIDL_CHECK(a.dtype() == b.dtype(), op, ": expected both tensors to have one dtype, got ",
               a.dtype(), " and ", b.dtype(), "; convert one with to()");
  MINIDL_CHECK(a.device() == b.device(), op, ": expected both tensors on one device, got ",
               a.device(), " and ", b.device());
  MINIDL_CHECK(rtol >= 0, op, ": expected rtol >= 0, got ", rtol);
  MINIDL_CHECK(atol >= 0, op, ": expected atol >= 0, got ", atol);
  broadcast_shapes(a.sizes(), b.sizes(), op);  // names this op when they do not broadcast
}

// The dtype the error |a - b| is computed in: bool as float32 (PyTorch's default dtype), uint8
// widened to int64 so that 1 - 2 does not wrap around to 255.
Tensor for_difference(const Tensor& x) {
  if (x.dtype() == kBool) return x.to(kFloat32);
  if (x.dtype() == kUInt8) return x.to(kInt64);
  return x;
}

Tensor unchecked_isclose(const Tensor& a, const Tensor& b, double rtol, double atol,
                         bool equal_nan) {
  // Closeness is a comparison: nothing here is recorded, even for inputs that require grad.
  NoGradGuard no_grad;
  Tensor close = eq(a, b);
  if (equal_nan && a.is_floating_point())
    close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  const Tensor self = for_difference(a), other = for_difference(b);
  const Tensor allowed_error = add(abs(mul(other, rtol)), atol);
  const Tensor actual_error = abs(sub(self, other));
  return logical_or(close, logical_and(isfinite(actual_error), le(actual_error, allowed_error)));
}

}  // namespace

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  check_closeness_arguments(a, b, rtol, atol, "isclose");
  const ProfileScope profile("isclose", {a, b});
  return unchecked_isclose(a, b, rtol, atol, equal_nan);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  check_closeness_arguments(a, b, rtol, atol, "allclose");
  const ProfileScope profile("allclose", {a, b});
  return all(unchecked_isclose(a, b, rtol, atol, equal_nan)).item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  check_defined(a, "equal", "input");
  check_defined(b, "equal", "other");
  MINIDL_CHECK(a.device() == b.device(), "equal: expected both tensors on one device, got ",
               a.device(), " and ", b.device());
  const ProfileScope profile("equal", {a, b});
  if (a.sizes() != b.sizes()) return false;
  NoGradGuard no_grad;
  return all(eq(a, b)).item<bool>();
}

}  // namespace minidl
