// Element-wise ops: checks, result allocation, dispatch to ops/cpu or ops/cuda by device, and
// each op's backward right after its forward. The math itself is in ops/elementwise_math.h.
//
// Binary ops broadcast: the kernels receive every operand viewed with the result's shape (zero
// strides on broadcast dimensions), and backward sums a broadcast input's gradient back to
// its shape (sum_to). Backward closures run under the engine's NoGradGuard, so the ops they
// call record nothing.
#include "minidl/ops/elementwise.h"

#include <cmath>
#include <initializer_list>

#include "minidl/core/autograd/function.h"
#include "minidl/core/cuda/build.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/cpu/elementwise.h"
#include "minidl/ops/cuda/elementwise.h"

namespace minidl {

namespace {

using elementwise::BinaryOp;
using elementwise::CompareOp;
using elementwise::TernaryOp;
using elementwise::UnaryOp;

// ---- checks ----
// Ops run these before touching their operands, and each begins with check_defined, so an
// undefined operand is reported with the op's name: `input` is the first operand, `other` the
// second (as in PyTorch's signatures), `self` the target of an in-place op.

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
               "got ", a.dtype(), " and ", b.dtype(), " (no implicit type promotion; convert one ",
               "with to())");
  MINIDL_CHECK(a.device() == b.device(), op, ": expected both operands on the same device, got ",
               a.device(), " and ", b.device());
}

// Integer tensors take integral scalars only: there is no promotion to floating point.
void check_scalar_fits(const Tensor& x, double value, const char* op) {
  MINIDL_CHECK(x.is_floating_point() || std::trunc(value) == value, op, ": the scalar ", value,
               " is not an integer and cannot be applied to a ", x.dtype(), " tensor (no ",
               "implicit type promotion); convert the tensor to a floating-point dtype first");
}

// ---- results and operands ----

// A result of shape `sizes`. It takes the layout of the first operand that has that shape and
// a dense layout (transposed, channels-last), as PyTorch does, so element-wise ops keep their
// input's memory format; otherwise it is row-major.
Tensor empty_result(const Shape& sizes, TensorOptions options,
                    std::initializer_list<const Tensor*> operands) {
  for (const Tensor* operand : operands) {
    if (operand->sizes() == sizes && !operand->is_contiguous() &&
        cpu::is_non_overlapping_and_dense(*operand))
      return empty_strided(sizes, operand->strides(), options);
  }
  return empty(sizes, options);
}

// `t` viewed with the shape `sizes` it broadcasts to; no autograd (kernels only read it).
Tensor expand_view(const Tensor& t, const Shape& sizes) {
  if (t.sizes() == sizes) return t;
  return make_view(t, sizes, broadcast_strides(t, sizes), t.storage_offset());
}

// ---- dispatch by device ----

void run_unary(UnaryOp op, const Tensor& out, const Tensor& x, double scalar) {
  if (out.numel() == 0) return;
  if (out.is_cpu()) return cpu::unary_kernel(op, out, x, scalar);
  if constexpr (cuda::kBuilt) return cuda::unary_kernel(op, out, x, scalar);
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double scalar) {
  if (out.numel() == 0) return;
  if (out.is_cpu()) return cpu::binary_kernel(op, out, a, b, scalar);
  if constexpr (cuda::kBuilt) return cuda::binary_kernel(op, out, a, b, scalar);
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

void run_ternary(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b,
                 const Tensor& c) {
  if (out.numel() == 0) return;
  if (out.is_cpu()) return cpu::ternary_kernel(op, out, a, b, c);
  if constexpr (cuda::kBuilt) return cuda::ternary_kernel(op, out, a, b, c);
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

void run_compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  if (out.is_cpu()) return cpu::compare_kernel(op, out, a, b);
  if constexpr (cuda::kBuilt) return cuda::compare_kernel(op, out, a, b);
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

void run_compare_scalar(CompareOp op, const Tensor& out, const Tensor& a, double scalar) {
  if (out.numel() == 0) return;
  if (out.is_cpu()) return cpu::compare_scalar_kernel(op, out, a, scalar);
  if constexpr (cuda::kBuilt) return cuda::compare_scalar_kernel(op, out, a, scalar);
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

void run_where(const Tensor& out, const Tensor& condition, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  if (out.is_cpu()) return cpu::where_kernel(out, condition, a, b);
  if constexpr (cuda::kBuilt) return cuda::where_kernel(out, condition, a, b);
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

// ---- forward helpers (no checks, no autograd) ----

Tensor unary_forward(UnaryOp op, const Tensor& x, double scalar = 0) {
  Tensor out = empty_result(x.sizes(), x.options(), {&x});
  run_unary(op, out, x, scalar);
  return out;
}

Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double scalar = 0) {
  const Shape sizes = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty_result(sizes, a.options(), {&a, &b});
  run_binary(op, out, expand_view(a, sizes), expand_view(b, sizes), scalar);
  return out;
}

Tensor ternary_forward(TernaryOp op, const Tensor& a, const Tensor& b, const Tensor& c,
                       const char* name) {
  const Shape sizes = broadcast_shapes(broadcast_shapes(a.sizes(), b.sizes(), name), c.sizes(),
                                       name);
  Tensor out = empty_result(sizes, a.options(), {&a, &b, &c});
  run_ternary(op, out, expand_view(a, sizes), expand_view(b, sizes), expand_view(c, sizes));
  return out;
}

// ---- shared op bodies ----

Tensor add_with_alpha(const Tensor& a, const Tensor& b, double alpha, const char* op,
                      const char* node_name) {
  check_same_dtype_and_device(a, b, op);
  check_numeric(a, op);
  check_scalar_fits(a, alpha, op);
  Tensor out = binary_forward(BinaryOp::Add, a, b, op, alpha);
  if (autograd::needs_grad({a, b})) {
    const Shape a_sizes = a.sizes(), b_sizes = b.sizes();
    const bool b_needs_grad = b.requires_grad();
    autograd::record(out, node_name, {a, b},
                     [a_sizes, b_sizes, b_needs_grad, alpha](const Tensor& grad) {
                       Tensor grad_b;
                       if (b_needs_grad)
                         grad_b = sum_to(alpha == 1 ? grad : mul(grad, alpha), b_sizes);
                       return std::vector<Tensor>{sum_to(grad, a_sizes), grad_b};
                     });
  }
  return out;
}

Tensor add_scalar(const Tensor& a, double value, const char* op, const char* node_name) {
  check_numeric(a, op);
  check_scalar_fits(a, value, op);
  Tensor out = unary_forward(UnaryOp::AddScalar, a, value);
  if (autograd::needs_grad({a}))
    autograd::record(out, node_name, {a},
                     [](const Tensor& grad) { return std::vector<Tensor>{grad}; });
  return out;
}

// maximum and minimum: `backward_op` gives one input's share given (grad, self, other).
Tensor extremum(const Tensor& a, const Tensor& b, BinaryOp forward_op, TernaryOp backward_op,
                const char* op, const char* node_name) {
  check_same_dtype_and_device(a, b, op);
  check_numeric(a, op);
  Tensor out = binary_forward(forward_op, a, b, op);
  if (autograd::needs_grad({a, b})) {
    autograd::SavedTensor saved_a(a, op), saved_b(b, op);
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    autograd::record(
        out, node_name, {a, b},
        [saved_a, saved_b, a_needs_grad, b_needs_grad, backward_op](const Tensor& grad) {
          const Tensor& input_a = saved_a.get();
          const Tensor& input_b = saved_b.get();
          Tensor grad_a, grad_b;
          if (a_needs_grad)
            grad_a = sum_to(ternary_forward(backward_op, grad, input_a, input_b, "backward"),
                            input_a.sizes());
          if (b_needs_grad)
            grad_b = sum_to(ternary_forward(backward_op, grad, input_b, input_a, "backward"),
                            input_b.sizes());
          return std::vector<Tensor>{grad_a, grad_b};
        });
  }
  return out;
}

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_dtype_and_device(a, b, name);
  const Shape sizes = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty_result(sizes, TensorOptions(kBool).device(a.device()), {&a, &b});
  run_compare(op, out, expand_view(a, sizes), expand_view(b, sizes));
  return out;
}

Tensor compare_scalar(CompareOp op, const Tensor& a, double value, const char* name) {
  check_defined(a, name, "input");
  Tensor out = empty_result(a.sizes(), TensorOptions(kBool).device(a.device()), {&a});
  run_compare_scalar(op, out, a, value);
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

// The other operand of an in-place op, checked and viewed with self's shape.
Tensor inplace_operand(const Tensor& self, const Tensor& other, const char* op) {
  check_same_dtype_and_device(self, other, op);
  const Shape sizes = broadcast_shapes(self.sizes(), other.sizes(), op);
  MINIDL_CHECK(sizes == self.sizes(), op, ": the other operand of shape ", other.sizes(),
               " cannot be broadcast to this tensor's shape ", self.sizes());
  return expand_view(other, sizes);
}

void add_inplace(Tensor& self, const Tensor& other, double alpha, const char* op) {
  check_inplace_target(self, op);
  check_numeric(self, op);
  check_scalar_fits(self, alpha, op);
  run_binary(BinaryOp::Add, self, self, inplace_operand(self, other, op), alpha);
  self.bump_version();
}

// After check_inplace_target and the op's own checks.
void unary_inplace(Tensor& self, UnaryOp op, double value) {
  run_unary(op, self, self, value);
  self.bump_version();
}

}  // namespace

// ---- unary ----

Tensor neg(const Tensor& x) {
  check_numeric(x, "neg");
  Tensor out = unary_forward(UnaryOp::Neg, x);
  if (autograd::needs_grad({x}))
    autograd::record(out, "NegBackward", {x},
                     [](const Tensor& grad) { return std::vector<Tensor>{neg(grad)}; });
  return out;
}

Tensor exp(const Tensor& x) {
  check_floating(x, "exp");
  Tensor out = unary_forward(UnaryOp::Exp, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_out(out, "exp");
    autograd::record(out, "ExpBackward", {x}, [saved_out](const Tensor& grad) {
      return std::vector<Tensor>{mul(grad, saved_out.get())};
    });
  }
  return out;
}

Tensor log(const Tensor& x) {
  check_floating(x, "log");
  Tensor out = unary_forward(UnaryOp::Log, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_x(x, "log");
    autograd::record(out, "LogBackward", {x}, [saved_x](const Tensor& grad) {
      return std::vector<Tensor>{div(grad, saved_x.get())};
    });
  }
  return out;
}

Tensor sqrt(const Tensor& x) {
  check_floating(x, "sqrt");
  Tensor out = unary_forward(UnaryOp::Sqrt, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_out(out, "sqrt");
    autograd::record(out, "SqrtBackward", {x}, [saved_out](const Tensor& grad) {
      return std::vector<Tensor>{
          binary_forward(BinaryOp::SqrtBackward, grad, saved_out.get(), "sqrt backward")};
    });
  }
  return out;
}

Tensor abs(const Tensor& x) {
  check_numeric(x, "abs");
  Tensor out = unary_forward(UnaryOp::Abs, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_x(x, "abs");
    autograd::record(out, "AbsBackward", {x}, [saved_x](const Tensor& grad) {
      return std::vector<Tensor>{
          binary_forward(BinaryOp::AbsBackward, grad, saved_x.get(), "abs backward")};
    });
  }
  return out;
}

Tensor relu(const Tensor& x) {
  check_floating(x, "relu");
  Tensor out = unary_forward(UnaryOp::Relu, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_out(out, "relu");
    autograd::record(out, "ReluBackward", {x}, [saved_out](const Tensor& grad) {
      return std::vector<Tensor>{
          binary_forward(BinaryOp::ReluBackward, grad, saved_out.get(), "relu backward")};
    });
  }
  return out;
}

Tensor sigmoid(const Tensor& x) {
  check_floating(x, "sigmoid");
  Tensor out = unary_forward(UnaryOp::Sigmoid, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_out(out, "sigmoid");
    autograd::record(out, "SigmoidBackward", {x}, [saved_out](const Tensor& grad) {
      return std::vector<Tensor>{
          binary_forward(BinaryOp::SigmoidBackward, grad, saved_out.get(), "sigmoid backward")};
    });
  }
  return out;
}

Tensor tanh(const Tensor& x) {
  check_floating(x, "tanh");
  Tensor out = unary_forward(UnaryOp::Tanh, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_out(out, "tanh");
    autograd::record(out, "TanhBackward", {x}, [saved_out](const Tensor& grad) {
      return std::vector<Tensor>{
          binary_forward(BinaryOp::TanhBackward, grad, saved_out.get(), "tanh backward")};
    });
  }
  return out;
}

Tensor gelu(const Tensor& x) {
  check_floating(x, "gelu");
  Tensor out = unary_forward(UnaryOp::Gelu, x);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_x(x, "gelu");
    autograd::record(out, "GeluBackward", {x}, [saved_x](const Tensor& grad) {
      return std::vector<Tensor>{
          binary_forward(BinaryOp::GeluBackward, grad, saved_x.get(), "gelu backward")};
    });
  }
  return out;
}

Tensor pow(const Tensor& x, double exponent) {
  check_floating(x, "pow");
  Tensor out = unary_forward(UnaryOp::Pow, x, exponent);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_x(x, "pow");
    autograd::record(out, "PowBackward", {x}, [saved_x, exponent](const Tensor& grad) {
      return std::vector<Tensor>{binary_forward(BinaryOp::PowBackward, grad, saved_x.get(),
                                                "pow backward", exponent)};
    });
  }
  return out;
}

// ---- binary ----

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  return add_with_alpha(a, b, alpha, "add", "AddBackward");
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  return add_with_alpha(a, b, -alpha, "sub", "SubBackward");
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device(a, b, "mul");
  check_numeric(a, "mul");
  Tensor out = binary_forward(BinaryOp::Mul, a, b, "mul");
  if (autograd::needs_grad({a, b})) {
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    // Each input's gradient needs the other input only.
    autograd::SavedTensor saved_a(b_needs_grad ? a : Tensor(), "mul");
    autograd::SavedTensor saved_b(a_needs_grad ? b : Tensor(), "mul");
    const Shape a_sizes = a.sizes(), b_sizes = b.sizes();
    autograd::record(out, "MulBackward", {a, b},
                     [saved_a, saved_b, a_sizes, b_sizes](const Tensor& grad) {
                       Tensor grad_a, grad_b;
                       if (saved_b.defined()) grad_a = sum_to(mul(grad, saved_b.get()), a_sizes);
                       if (saved_a.defined()) grad_b = sum_to(mul(grad, saved_a.get()), b_sizes);
                       return std::vector<Tensor>{grad_a, grad_b};
                     });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device(a, b, "div");
  check_floating(a, "div");
  Tensor out = binary_forward(BinaryOp::Div, a, b, "div");
  if (autograd::needs_grad({a, b})) {
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    autograd::SavedTensor saved_a(b_needs_grad ? a : Tensor(), "div");
    autograd::SavedTensor saved_b(b, "div");
    const Shape a_sizes = a.sizes(), b_sizes = b.sizes();
    autograd::record(
        out, "DivBackward", {a, b},
        [saved_a, saved_b, a_needs_grad, a_sizes, b_sizes](const Tensor& grad) {
          Tensor grad_a, grad_b;
          if (a_needs_grad) grad_a = sum_to(div(grad, saved_b.get()), a_sizes);
          if (saved_a.defined())
            grad_b = sum_to(ternary_forward(TernaryOp::DivBackwardDivisor, grad, saved_a.get(),
                                            saved_b.get(), "div backward"),
                            b_sizes);
          return std::vector<Tensor>{grad_a, grad_b};
        });
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

// ---- with a scalar ----

Tensor add(const Tensor& a, double b) { return add_scalar(a, b, "add", "AddBackward"); }

Tensor sub(const Tensor& a, double b) { return add_scalar(a, -b, "sub", "SubBackward"); }

Tensor mul(const Tensor& a, double b) {
  check_numeric(a, "mul");
  check_scalar_fits(a, b, "mul");
  Tensor out = unary_forward(UnaryOp::MulScalar, a, b);
  if (autograd::needs_grad({a}))
    autograd::record(out, "MulBackward", {a},
                     [b](const Tensor& grad) { return std::vector<Tensor>{mul(grad, b)}; });
  return out;
}

Tensor div(const Tensor& a, double b) {
  check_floating(a, "div");
  Tensor out = unary_forward(UnaryOp::DivScalar, a, b);
  if (autograd::needs_grad({a}))
    autograd::record(out, "DivBackward", {a},
                     [b](const Tensor& grad) { return std::vector<Tensor>{div(grad, b)}; });
  return out;
}

// ---- comparisons ----

Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ge, a, b, "ge"); }
Tensor eq(const Tensor& a, double b) { return compare_scalar(CompareOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, double b) { return compare_scalar(CompareOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, double b) { return compare_scalar(CompareOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, double b) { return compare_scalar(CompareOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, double b) { return compare_scalar(CompareOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, double b) { return compare_scalar(CompareOp::Ge, a, b, "ge"); }

// ---- where ----

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_defined(condition, "where", "condition");
  check_same_dtype_and_device(a, b, "where");
  MINIDL_CHECK(condition.dtype() == kBool, "where: expected the condition to be a bool tensor, ",
               "got ", condition.dtype());
  MINIDL_CHECK(condition.device() == a.device(), "where: expected the condition on ", a.device(),
               " with the operands, got ", condition.device());
  const Shape sizes = broadcast_shapes(
      broadcast_shapes(condition.sizes(), a.sizes(), "where"), b.sizes(), "where");
  Tensor out = empty_result(sizes, a.options(), {&a, &b});
  run_where(out, expand_view(condition, sizes), expand_view(a, sizes), expand_view(b, sizes));
  if (autograd::needs_grad({a, b})) {
    autograd::SavedTensor saved_condition(condition, "where");
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    const Shape a_sizes = a.sizes(), b_sizes = b.sizes();
    autograd::record(
        out, "WhereBackward", {a, b},
        [saved_condition, a_needs_grad, b_needs_grad, a_sizes, b_sizes](const Tensor& grad) {
          const Tensor zero = zeros({}, grad.options());
          Tensor grad_a, grad_b;
          if (a_needs_grad) grad_a = sum_to(where(saved_condition.get(), grad, zero), a_sizes);
          if (b_needs_grad) grad_b = sum_to(where(saved_condition.get(), zero, grad), b_sizes);
          return std::vector<Tensor>{grad_a, grad_b};
        });
  }
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

Tensor& Tensor::add_(double value) {
  check_inplace_target(*this, "add_");
  check_numeric(*this, "add_");
  check_scalar_fits(*this, value, "add_");
  unary_inplace(*this, UnaryOp::AddScalar, value);
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  check_inplace_target(*this, "mul_");
  check_numeric(*this, "mul_");
  run_binary(BinaryOp::Mul, *this, *this, inplace_operand(*this, other, "mul_"), 0);
  bump_version();
  return *this;
}

Tensor& Tensor::mul_(double value) {
  check_inplace_target(*this, "mul_");
  check_numeric(*this, "mul_");
  check_scalar_fits(*this, value, "mul_");
  unary_inplace(*this, UnaryOp::MulScalar, value);
  return *this;
}

Tensor& Tensor::div_(double value) {
  check_inplace_target(*this, "div_");
  check_floating(*this, "div_");
  unary_inplace(*this, UnaryOp::DivScalar, value);
  return *this;
}

}  // namespace minidl
