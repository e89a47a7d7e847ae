// Binary arithmetic, with broadcasting and with a scalar (add, sub, mul, div, maximum, minimum,
// atan2, fmod, remainder, clamp with tensor bounds), and the in-place Tensor methods (add_, sub_,
// mul_, div_). Each op's backward follows its forward; the helpers are in ops/elementwise_op.h.
#include <optional>
#include <utility>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/core/type_promotion.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/elementwise_kernels.h"
#include "minidl/ops/elementwise_op.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

using elementwise::binary_forward;
using elementwise::BinaryOp;
using elementwise::check_floating;
using elementwise::check_inplace_scalar;
using elementwise::check_numeric;
using elementwise::check_same_dtype_and_device;
using elementwise::check_scalar_fits;
using elementwise::Operands;
using elementwise::promote_operands;
using elementwise::promoted_for;
using elementwise::scalar_operand;
using elementwise::ternary_forward;
using elementwise::TernaryOp;
using elementwise::unary_forward;
using elementwise::UnaryOp;

// ---- shared op bodies ----

Tensor add_with_alpha(const Tensor& a, const Tensor& b, double alpha, const char* op,
                      const char* node_name) {
  check_same_dtype_and_device(a, b, op);
  check_numeric(a, op);
  check_scalar_fits(a, alpha, op);
  Tensor out = binary_forward(BinaryOp::Add, a, b, op, alpha);
  if (autograd::needs_grad({a, b})) {
    // The lambda keeps copies of the sizes.
    const Shape& a_sizes = a.sizes();
    const Shape& b_sizes = b.sizes();
    const bool b_needs_grad = b.requires_grad();
    autograd::record(
        out, node_name, {a, b},
        [a_sizes, b_sizes, b_needs_grad, alpha](const Tensor& grad) {
          Tensor grad_b;
          if (b_needs_grad) grad_b = sum_to(alpha == 1 ? grad : mul(grad, alpha), b_sizes);
          return std::vector<Tensor>{sum_to(grad, a_sizes), grad_b};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor add_scalar(const Tensor& a, double value, const char* op, const char* node_name) {
  check_numeric(a, op);
  Tensor out = unary_forward(UnaryOp::AddScalar, a, "add", value);
  if (autograd::needs_grad({a}))
    autograd::record(
        out, node_name, {a}, [](const Tensor& grad) { return std::vector<Tensor>{grad}; },
        autograd::DoubleBackward::kSupported);
  return out;
}

// maximum and minimum: `backward_op` gives one input's share given (grad, self, other).
Tensor extremum(const Tensor& input, const Tensor& other, BinaryOp forward_op,
                TernaryOp backward_op, const char* op, const char* node_name) {
  const auto [a, b] = promote_operands(input, other, op);
  check_numeric(a, op);
  Tensor out = binary_forward(forward_op, a, b, op);
  if (autograd::needs_grad({a, b})) {
    autograd::SavedTensor saved_a(a, op), saved_b(b, op);
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    autograd::record(
        out, node_name, {a, b},
        [saved_a, saved_b, a_needs_grad, b_needs_grad, backward_op](const Tensor& grad) {
          const Tensor input_a = saved_a.get();
          const Tensor input_b = saved_b.get();
          // One input's share: the kernel, or under create_graph PyTorch's formula as recorded
          // ops (the whole gradient where this input wins, half of it at a tie, none where the
          // other wins), differentiable again.
          const auto share = [&grad, backward_op](const Tensor& self, const Tensor& other) {
            if (!GradMode::is_enabled())
              return ternary_forward(backward_op, grad, self, other, "backward");
            const Tensor loses =
                backward_op == TernaryOp::MaximumBackward ? self < other : self > other;
            return where(loses, 0.0, where(self == other, grad * 0.5, grad));
          };
          Tensor grad_a, grad_b;
          if (a_needs_grad) grad_a = sum_to(share(input_a, input_b), input_a.sizes());
          if (b_needs_grad) grad_b = sum_to(share(input_b, input_a), input_b.sizes());
          return std::vector<Tensor>{grad_a, grad_b};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// PyTorch's integer fmod and remainder raise ZeroDivisionError for a zero divisor on the CPU;
// so do these (CUDA's kernels give 0 instead of waiting for the device to learn it).
void check_no_integer_zero_divisor(const Tensor& divisor, const char* op) {
  if (divisor.is_floating_point() || !divisor.is_cpu() || divisor.numel() == 0) return;
  MINIDL_CHECK(!any(eq(divisor, 0)).item<bool>(), op, ": ZeroDivisionError: an integer (",
               divisor.dtype(), ") divisor holds 0");
}

// atan2's, fmod's and remainder's gradients as recorded ops, for a backward under create_graph
// whose result is differentiated again (PyTorch's formulas): atan2 b / (a^2 + b^2) and
// -a / (a^2 + b^2); fmod 1 and -trunc(a / b); remainder 1 and -floor(a / b).
std::pair<Tensor, Tensor> recorded_derivatives(BinaryOp op, const Tensor& grad, const Tensor& a,
                                               const Tensor& b) {
  switch (op) {
    case BinaryOp::Atan2: {
      const Tensor scaled = grad / (a * a + b * b);
      return {scaled * b, neg(scaled * a)};
    }
    case BinaryOp::Fmod: return {grad, neg(grad * trunc(a / b))};
    case BinaryOp::Remainder: return {grad, neg(grad * floor(a / b))};
    default:
      MINIDL_INTERNAL_ASSERT(false, "no recorded derivatives for binary op ", static_cast<int>(op));
  }
  return {};
}

// atan2, fmod and remainder, on operands of one dtype (promoted by their callers): each input's
// gradient is a ternary kernel of (grad, input, other), or for `input` the incoming gradient
// itself where input_derivative is empty (fmod and remainder have slope 1 in their first
// operand); under create_graph, recorded_derivatives.
Tensor differentiable_binary(const Tensor& a, const Tensor& b, BinaryOp forward_op,
                             std::optional<TernaryOp> input_derivative, TernaryOp other_derivative,
                             const char* op, const char* node_name) {
  Tensor out = binary_forward(forward_op, a, b, op);
  if (autograd::needs_grad({a, b})) {
    autograd::SavedTensor saved_a(a, op), saved_b(b, op);
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    autograd::record(
        out, node_name, {a, b},
        [saved_a, saved_b, a_needs_grad, b_needs_grad, forward_op, input_derivative,
         other_derivative, node_name](const Tensor& grad) {
          const Tensor& input = saved_a.get();
          const Tensor& other = saved_b.get();
          if (GradMode::is_enabled()) {
            auto [grad_a, grad_b] = recorded_derivatives(forward_op, grad, input, other);
            return std::vector<Tensor>{a_needs_grad ? sum_to(grad_a, input.sizes()) : Tensor(),
                                       b_needs_grad ? sum_to(grad_b, other.sizes()) : Tensor()};
          }
          Tensor grad_a, grad_b;
          if (a_needs_grad)
            grad_a = sum_to(input_derivative
                                ? ternary_forward(*input_derivative, grad, input, other, node_name)
                                : grad,
                            input.sizes());
          if (b_needs_grad)
            grad_b = sum_to(ternary_forward(other_derivative, grad, input, other, node_name),
                            other.sizes());
          return std::vector<Tensor>{grad_a, grad_b};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// ---- in-place ----

// Checks `self` as the target of an in-place op. A broadcast view (stride 0 on a dimension of
// size > 1) is refused: several of its elements share one memory location.
void check_inplace_target(const Tensor& self, const char* op) {
  check_defined(self, op, "self");
  autograd::check_inplace(self, op);
  for (int64_t d = 0; d < self.dim(); ++d)
    MINIDL_CHECK(self.stride(d) != 0 || self.size(d) <= 1, op, ": cannot write in place into ",
                 "a broadcast view of shape ", self.sizes(), " and strides ", self.strides(),
                 " (several elements share one memory location); clone() it first");
}

// self = op(self, other; scalar), after check_inplace_target and the op's own checks. `other`
// is checked here, and viewed with self's shape. Mixed dtypes compute in their result_type, which
// self's dtype must be able to hold (no floating result into an integer tensor), as in PyTorch.
void binary_inplace(Tensor& self, BinaryOp op, const Tensor& other_operand, double scalar,
                    const char* name) {
  const ProfileScope profile(name, {self, other_operand});
  check_defined(other_operand, name, "other");
  const DType dtype = result_type(self, other_operand);
  MINIDL_CHECK(can_cast(dtype, self.dtype()), name, ": the result type ", dtype,
               " cannot be written into this ", self.dtype(), " tensor (in-place ops keep the ",
               "target's dtype); convert it with to() and use the out-of-place op");
  if (dtype != self.dtype()) {
    // A wider result (float32 += float64) is computed in its own dtype, then rounded into self
    // once, as PyTorch does.
    Tensor wide = self.to(dtype);
    binary_inplace(wide, op, other_operand, scalar, name);
    self.copy_(wide);
    return;
  }
  const Tensor other = other_operand.to(dtype);
  check_same_dtype_and_device(self, other, name);
  const Shape sizes = broadcast_shapes(self.sizes(), other.sizes(), name);
  MINIDL_CHECK(sizes == self.sizes(), name, ": the other operand of shape ", other.sizes(),
               " cannot be broadcast to this tensor's shape ", self.sizes());
  const Tensor operand = elementwise::expand_view(other, sizes);
  if (self.numel() > 0)
    kernels_for<ElementwiseKernels>(self.device()).binary(op, self, self, operand, scalar);
  self.bump_version();
}

// self = op(self; value), after check_inplace_target and the op's own checks.
void unary_inplace(Tensor& self, UnaryOp op, double value, const char* name) {
  const ProfileScope profile(name, {self});
  if (self.numel() > 0) kernels_for<ElementwiseKernels>(self.device()).unary(op, self, self, value);
  self.bump_version();
}

// fmod and remainder: the operands promoted as PyTorch's, floating or integer.
Tensor modulo(const Tensor& input, const Tensor& other, BinaryOp forward_op,
              TernaryOp other_derivative, const char* op, const char* node_name) {
  const auto [a, b] = promote_operands(input, other, op);
  check_numeric(a, op);
  check_no_integer_zero_divisor(b, op);
  return differentiable_binary(a, b, forward_op, std::nullopt, other_derivative, op, node_name);
}

void add_inplace(Tensor& self, const Tensor& other, double alpha, const char* op) {
  check_inplace_target(self, op);
  check_numeric(self, op);
  check_scalar_fits(self, alpha, op);
  binary_inplace(self, BinaryOp::Add, other, alpha, op);
}

}  // namespace

// ---- binary ----

// Bool operands add and multiply as PyTorch's, in bool: + is logical or (true + true is true),
// * logical and; so a bool tensor + true stays bool. Subtraction of bools is an error there and
// here (check_numeric).
Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  const Operands operands = promote_operands(a, b, "add");
  if (operands.a.dtype() == kBool)
    return logical_or(operands.a, alpha != 0 ? operands.b : zeros_like(operands.b));
  return add_with_alpha(operands.a, operands.b, alpha, "add", "AddBackward");
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  const Operands operands = promote_operands(a, b, "sub");
  return add_with_alpha(operands.a, operands.b, -alpha, "sub", "SubBackward");
}

Tensor mul(const Tensor& input, const Tensor& other) {
  const auto [a, b] = promote_operands(input, other, "mul");
  if (a.dtype() == kBool) return logical_and(a, b);
  check_numeric(a, "mul");
  Tensor out = binary_forward(BinaryOp::Mul, a, b, "mul");
  if (autograd::needs_grad({a, b})) {
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    // Each input's gradient needs the other input only.
    autograd::SavedTensor saved_a(b_needs_grad ? a : Tensor(), "mul");
    autograd::SavedTensor saved_b(a_needs_grad ? b : Tensor(), "mul");
    const Shape& a_sizes = a.sizes();
    const Shape& b_sizes = b.sizes();
    autograd::record(
        out, "MulBackward", {a, b},
        [saved_a, saved_b, a_sizes, b_sizes](const Tensor& grad) {
          Tensor grad_a, grad_b;
          if (saved_b.defined()) grad_a = sum_to(mul(grad, saved_b.get()), a_sizes);
          if (saved_a.defined()) grad_b = sum_to(mul(grad, saved_a.get()), b_sizes);
          return std::vector<Tensor>{grad_a, grad_b};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor div(const Tensor& input, const Tensor& other) {
  auto [a, b] = promote_operands(input, other, "div");
  // True division: integer and bool operands divide in float32, as in PyTorch.
  if (!a.is_floating_point()) {
    a = a.to(kFloat32);
    b = b.to(kFloat32);
  }
  check_floating(a, "div");
  Tensor out = binary_forward(BinaryOp::Div, a, b, "div");
  if (autograd::needs_grad({a, b})) {
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    autograd::SavedTensor saved_a(b_needs_grad ? a : Tensor(), "div");
    autograd::SavedTensor saved_b(b, "div");
    const Shape& a_sizes = a.sizes();
    const Shape& b_sizes = b.sizes();
    autograd::record(
        out, "DivBackward", {a, b},
        [saved_a, saved_b, a_needs_grad, a_sizes, b_sizes](const Tensor& grad) {
          Tensor grad_a, grad_b;
          if (a_needs_grad) grad_a = sum_to(div(grad, saved_b.get()), a_sizes);
          if (saved_a.defined()) {
            // -grad a / b^2: one kernel, or PyTorch's recorded formula
            // -grad (a / b) / b under create_graph.
            const Tensor divisor = saved_b.get();
            grad_b = sum_to(GradMode::is_enabled()
                                ? neg(grad) * div(div(saved_a.get(), divisor), divisor)
                                : ternary_forward(TernaryOp::DivBackwardDivisor, grad,
                                                  saved_a.get(), divisor, "div backward"),
                            b_sizes);
          }
          return std::vector<Tensor>{grad_a, grad_b};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  return extremum(a, b, BinaryOp::Maximum, TernaryOp::MaximumBackward, "maximum",
                  "MaximumBackward");
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  return extremum(a, b, BinaryOp::Minimum, TernaryOp::MinimumBackward, "minimum",
                  "MinimumBackward");
}

Tensor atan2(const Tensor& input, const Tensor& other) {
  auto [a, b] = promote_operands(input, other, "atan2");
  // Integer and bool operands compute in float32, as PyTorch's.
  if (!a.is_floating_point()) {
    a = a.to(kFloat32);
    b = b.to(kFloat32);
  }
  return differentiable_binary(a, b, BinaryOp::Atan2, TernaryOp::Atan2BackwardInput,
                               TernaryOp::Atan2BackwardOther, "atan2", "Atan2Backward");
}

Tensor fmod(const Tensor& input, const Tensor& other) {
  return modulo(input, other, BinaryOp::Fmod, TernaryOp::FmodBackwardDivisor, "fmod",
                "FmodBackward");
}

Tensor remainder(const Tensor& input, const Tensor& other) {
  return modulo(input, other, BinaryOp::Remainder, TernaryOp::RemainderBackwardDivisor, "remainder",
                "RemainderBackward");
}

Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  const ProfileScope profile("clamp", {x});  // around the maximum and minimum below
  const bool has_min = min && min->defined(), has_max = max && max->defined();
  MINIDL_CHECK(has_min || has_max, "clamp: expected at least one of min and max, got neither");
  check_numeric(x, "clamp");
  Shape sizes = x.sizes();
  for (const std::optional<Tensor>* bound : {&min, &max}) {
    if (!*bound || !(*bound)->defined()) continue;
    const Tensor& value = **bound;
    MINIDL_CHECK(value.device() == x.device(), "clamp: expected the bounds on the input's ",
                 "device ", x.device(), ", got ", value.device());
    check_numeric(value, "clamp");
    sizes = broadcast_shapes(sizes, value.sizes(), "clamp");
  }
  // PyTorch's clamp with tensor bounds is minimum(maximum(x, min), max), in value (a NaN in any
  // operand gives NaN), in gradient (ties split evenly between x and the bound) and in dtype
  // (maximum and minimum promote, as clamp's result_type of the three), so it is written as that.
  const Tensor above = has_min ? maximum(x, *min) : x;
  return has_max ? minimum(above, *max) : above;
}

Tensor clamp_min(const Tensor& x, const Tensor& min) {
  check_defined(x, "clamp_min", "input");
  check_defined(min, "clamp_min", "min");
  return clamp(x, min, std::nullopt);
}

Tensor clamp_max(const Tensor& x, const Tensor& max) {
  check_defined(x, "clamp_max", "input");
  check_defined(max, "clamp_max", "max");
  return clamp(x, std::nullopt, max);
}

// ---- with a scalar ----
// fmod and remainder take the scalar as a 0-dimensional tensor of the promoted dtype and the
// input's device, as where does.

Tensor fmod(const Tensor& input, Scalar other) {
  check_defined(input, "fmod", "input");
  return fmod(input, scalar_operand(input, other));
}

Tensor remainder(const Tensor& input, Scalar other) {
  check_defined(input, "remainder", "input");
  return remainder(input, scalar_operand(input, other));
}

// The tensor computes in result_type(tensor, scalar) (promoted_for): an integer or bool tensor
// with a floating-point scalar in float32, a bool tensor with an integer scalar in int64.

Tensor add(const Tensor& a, Scalar b) {
  const Tensor input = promoted_for(a, b, "add");
  if (input.dtype() == kBool) return logical_or(input, scalar_operand(input, b));
  return add_scalar(input, b.to_double(), "add", "AddBackward");
}

Tensor sub(const Tensor& a, Scalar b) {
  return add_scalar(promoted_for(a, b, "sub"), -b.to_double(), "sub", "SubBackward");
}

Tensor mul(const Tensor& input, Scalar scalar) {
  const Tensor a = promoted_for(input, scalar, "mul");
  if (a.dtype() == kBool) return logical_and(a, scalar_operand(a, scalar));
  check_numeric(a, "mul");
  const double b = scalar.to_double();
  Tensor out = unary_forward(UnaryOp::MulScalar, a, "mul", b);
  if (autograd::needs_grad({a}))
    autograd::record(
        out, "MulBackward", {a},
        [b](const Tensor& grad) { return std::vector<Tensor>{mul(grad, b)}; },
        autograd::DoubleBackward::kSupported);
  return out;
}

Tensor div(const Tensor& input, Scalar scalar) {
  // True division: an integer or bool tensor divides in float32 whatever the scalar.
  check_defined(input, "div", "input");
  const double b = scalar.to_double();
  const Tensor a = input.is_floating_point() ? input : input.to(kFloat32);
  check_floating(a, "div");
  Tensor out = unary_forward(UnaryOp::DivScalar, a, "div", b);
  if (autograd::needs_grad({a}))
    autograd::record(
        out, "DivBackward", {a},
        [b](const Tensor& grad) { return std::vector<Tensor>{div(grad, b)}; },
        autograd::DoubleBackward::kSupported);
  return out;
}

// ---- in-place Tensor methods (not recorded: see autograd::check_inplace) ----

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  add_inplace(*this, other, alpha, "add_");
  return *this;
}

Tensor& Tensor::sub_(const Tensor& other, double alpha) {
  add_inplace(*this, other, -alpha, "sub_");
  return *this;
}

Tensor& Tensor::add_(Scalar value) {
  check_inplace_target(*this, "add_");
  check_numeric(*this, "add_");
  check_inplace_scalar(*this, value, "add_");
  unary_inplace(*this, UnaryOp::AddScalar, value.to_double(), "add_");
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  check_inplace_target(*this, "mul_");
  check_numeric(*this, "mul_");
  binary_inplace(*this, BinaryOp::Mul, other, 0, "mul_");
  return *this;
}

Tensor& Tensor::mul_(Scalar value) {
  check_inplace_target(*this, "mul_");
  check_numeric(*this, "mul_");
  check_inplace_scalar(*this, value, "mul_");
  unary_inplace(*this, UnaryOp::MulScalar, value.to_double(), "mul_");
  return *this;
}

Tensor& Tensor::div_(Scalar value) {
  check_inplace_target(*this, "div_");
  check_floating(*this, "div_");
  unary_inplace(*this, UnaryOp::DivScalar, value.to_double(), "div_");
  return *this;
}

// In-place clamp with scalar bounds: each bound is checked before either is applied, so that a
// refused bound leaves the tensor as it was.
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  check_inplace_target(*this, "clamp_");
  MINIDL_CHECK(min || max, "clamp_: expected at least one of min and max, got neither");
  check_numeric(*this, "clamp_");
  for (const std::optional<Scalar>& bound : {min, max})
    if (bound) check_inplace_scalar(*this, *bound, "clamp_");
  if (min) unary_inplace(*this, UnaryOp::ClampMin, min->to_double(), "clamp_");
  if (max) unary_inplace(*this, UnaryOp::ClampMax, max->to_double(), "clamp_");
  return *this;
}

Tensor& Tensor::clamp_min_(Scalar min) { return clamp_(min, std::nullopt); }
Tensor& Tensor::clamp_max_(Scalar max) { return clamp_(std::nullopt, max); }

// With tensor bounds: the out-of-place clamp (which checks and promotes the bounds), written back
// when its result has this tensor's shape and a dtype this tensor can hold, as PyTorch's clamp_.
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  check_inplace_target(*this, "clamp_");
  Tensor clamped;
  {
    NoGradGuard no_grad;
    clamped = minidl::clamp(*this, min, max);
  }
  MINIDL_CHECK(clamped.sizes() == sizes(), "clamp_: bounds that broadcast with this tensor to ",
               "the shape ", clamped.sizes(), " cannot be applied in place to its shape ", sizes());
  MINIDL_CHECK(can_cast(clamped.dtype(), dtype()), "clamp_: the result type ", clamped.dtype(),
               " cannot be written into this ", dtype(), " tensor (in-place ops keep the ",
               "target's dtype); convert it with to() and use the out-of-place clamp");
  return copy_(clamped);
}

Tensor& Tensor::clamp_min_(const Tensor& min) { return clamp_(min, std::nullopt); }
Tensor& Tensor::clamp_max_(const Tensor& max) { return clamp_(std::nullopt, max); }

}  // namespace minidl
