// The unary math ops and activations, table-driven: one row per op says what the op accepts,
// which kernel computes it (a UnaryOp naming a functor of ops/elementwise_math.h), which tensor
// its backward keeps and which kernel computes its derivative (a BinaryOp of (grad, kept)).
// Every row then runs the same body (unary_op). neg keeps nothing for its backward and is
// written out.
#include <cmath>
#include <optional>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/elementwise_op.h"

namespace minidl {

namespace {

using elementwise::BinaryOp;
using elementwise::Scalars;
using elementwise::UnaryOp;

enum class Accepts { Floating, Numeric };  // Numeric: floating or integer, not bool
enum class Keeps { Input, Output };        // the tensor backward reads

constexpr Accepts kFloating = Accepts::Floating, kNumeric = Accepts::Numeric;
constexpr Keeps kInput = Keeps::Input, kOutput = Keeps::Output;

struct UnaryOpSpec {
  const char* name;       // in errors: "exp: expected a floating-point tensor ..."
  const char* node_name;  // the autograd node
  UnaryOp kernel;         // out = kernel(x; scalar)
  Accepts accepts;
  Keeps keeps;
  BinaryOp derivative;  // grad_input = derivative(grad, kept; scalars)
};

// clang-format off
constexpr UnaryOpSpec kUnaryOps[] = {
  // name       autograd node      kernel            accepts    keeps    derivative
    {"exp",     "ExpBackward",     UnaryOp::Exp,     kFloating, kOutput, BinaryOp::Mul},
    {"log",     "LogBackward",     UnaryOp::Log,     kFloating, kInput,  BinaryOp::Div},
    {"sqrt",    "SqrtBackward",    UnaryOp::Sqrt,    kFloating, kOutput, BinaryOp::SqrtBackward},
    {"abs",     "AbsBackward",     UnaryOp::Abs,     kNumeric,  kInput,  BinaryOp::AbsBackward},
    {"relu",    "ReluBackward",    UnaryOp::Relu,    kFloating, kOutput, BinaryOp::ReluBackward},
    {"sigmoid", "SigmoidBackward", UnaryOp::Sigmoid, kFloating, kOutput, BinaryOp::SigmoidBackward},
    {"tanh",    "TanhBackward",    UnaryOp::Tanh,    kFloating, kOutput, BinaryOp::TanhBackward},
    {"gelu",    "GeluBackward",    UnaryOp::Gelu,    kFloating, kInput,  BinaryOp::GeluBackward},
    {"gelu",    "GeluBackward",    UnaryOp::GeluTanh, kFloating, kInput, BinaryOp::GeluTanhBackward},
    {"pow",     "PowBackward",     UnaryOp::Pow,     kFloating, kInput,  BinaryOp::PowBackward},
    {"sin",     "SinBackward",     UnaryOp::Sin,     kFloating, kInput,  BinaryOp::SinBackward},
    {"cos",     "CosBackward",     UnaryOp::Cos,     kFloating, kInput,  BinaryOp::CosBackward},
    {"tan",     "TanBackward",     UnaryOp::Tan,     kFloating, kOutput, BinaryOp::TanBackward},
    {"asin",    "AsinBackward",    UnaryOp::Asin,    kFloating, kInput,  BinaryOp::AsinBackward},
    {"acos",    "AcosBackward",    UnaryOp::Acos,    kFloating, kInput,  BinaryOp::AcosBackward},
    {"atan",    "AtanBackward",    UnaryOp::Atan,    kFloating, kInput,  BinaryOp::AtanBackward},
    {"sinh",    "SinhBackward",    UnaryOp::Sinh,    kFloating, kInput,  BinaryOp::SinhBackward},
    {"cosh",    "CoshBackward",    UnaryOp::Cosh,    kFloating, kInput,  BinaryOp::CoshBackward},
    {"exp2",    "Exp2Backward",    UnaryOp::Exp2,    kFloating, kOutput, BinaryOp::Exp2Backward},
    {"expm1",   "Expm1Backward",   UnaryOp::Expm1,   kFloating, kOutput, BinaryOp::Expm1Backward},
    {"log1p",   "Log1pBackward",   UnaryOp::Log1p,   kFloating, kInput,  BinaryOp::Log1pBackward},
    {"log2",    "Log2Backward",    UnaryOp::Log2,    kFloating, kInput,  BinaryOp::Log2Backward},
    {"log10",   "Log10Backward",   UnaryOp::Log10,   kFloating, kInput,  BinaryOp::Log10Backward},
    {"erf",     "ErfBackward",     UnaryOp::Erf,     kFloating, kInput,  BinaryOp::ErfBackward},
    {"erfc",    "ErfcBackward",    UnaryOp::Erfc,    kFloating, kInput,  BinaryOp::ErfcBackward},
    {"floor",   "FloorBackward",   UnaryOp::Floor,   kFloating, kInput,  BinaryOp::ZeroGradient},
    {"ceil",    "CeilBackward",    UnaryOp::Ceil,    kFloating, kInput,  BinaryOp::ZeroGradient},
    {"trunc",   "TruncBackward",   UnaryOp::Trunc,   kFloating, kInput,  BinaryOp::ZeroGradient},
    {"round",   "RoundBackward",   UnaryOp::Round,   kFloating, kInput,  BinaryOp::ZeroGradient},
    {"frac",    "FracBackward",    UnaryOp::Frac,    kFloating, kInput,  BinaryOp::PassGradient},
    {"sign",    "SignBackward",    UnaryOp::Sign,    kFloating, kInput,  BinaryOp::ZeroGradient},
    {"rsqrt",   "RsqrtBackward",   UnaryOp::Rsqrt,   kFloating, kOutput, BinaryOp::RsqrtBackward},
    {"reciprocal", "ReciprocalBackward", UnaryOp::Reciprocal, kFloating, kOutput,
                                                                BinaryOp::ReciprocalBackward},
    {"square",  "SquareBackward",  UnaryOp::Square,  kFloating, kInput,  BinaryOp::SquareBackward},
    {"silu",    "SiluBackward",    UnaryOp::Silu,    kFloating, kInput,  BinaryOp::SiluBackward},
    {"leaky_relu", "LeakyReluBackward", UnaryOp::LeakyRelu, kFloating, kInput,
                                                                BinaryOp::LeakyReluBackward},
    {"elu",     "EluBackward",     UnaryOp::Elu,     kFloating, kInput,  BinaryOp::EluBackward},
    {"clamp_min", "ClampMinBackward", UnaryOp::ClampMin, kNumeric, kInput,
                                                                BinaryOp::ClampMinBackward},
    {"clamp_max", "ClampMaxBackward", UnaryOp::ClampMax, kNumeric, kInput,
                                                                BinaryOp::ClampMaxBackward},
    {"softplus", "SoftplusBackward", UnaryOp::Softplus, kFloating, kInput,
                                                                BinaryOp::SoftplusBackward},
    {"hardtanh", "HardtanhBackward", UnaryOp::Hardtanh, kFloating, kInput,
                                                                BinaryOp::HardtanhBackward},
};
// clang-format on

const UnaryOpSpec& spec_of(UnaryOp kernel) {
  for (const UnaryOpSpec& spec : kUnaryOps)
    if (spec.kernel == kernel) return spec;
  MINIDL_INTERNAL_ASSERT(false, "unary op ", static_cast<int>(kernel), " has no table row");
  return kUnaryOps[0];
}

// The gradient of `kernel`'s row as a composition of recorded ops, for a backward pass with
// create_graph (grad mode on): the same derivative as the row's BinaryOp kernel, but with a graph
// of its own, so that it can be differentiated again. `kept` is what the row keeps (the input,
// or the output rebuilt with its grad_fn by SavedTensor::get). Masks of comparisons are constants
// (their derivative is zero almost everywhere, as in PyTorch's formulas).
Tensor differentiable_derivative(UnaryOp kernel, const Tensor& grad, const Tensor& kept,
                                 Scalars scalars) {
  constexpr double kPi = 3.14159265358979323846;
  constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
  const Tensor& x = kept;    // for the rows that keep the input
  const Tensor& out = kept;  // for the rows that keep the output
  switch (kernel) {
    case UnaryOp::Exp: return grad * out;
    case UnaryOp::Log: return grad / x;
    case UnaryOp::Sqrt: return grad / (2.0 * out);
    case UnaryOp::Abs: return grad * sign(x);
    case UnaryOp::Relu: return where(out > 0.0, grad, 0.0);
    case UnaryOp::Sigmoid: return grad * (out * (1.0 - out));
    case UnaryOp::Tanh: return grad * (1.0 - out * out);
    case UnaryOp::Gelu: {
      // d/dx x Phi(x) = Phi(x) + x phi(x)
      const Tensor cdf = 0.5 * (1.0 + erf(x * (1.0 / std::sqrt(2.0))));
      const Tensor pdf = exp(-0.5 * x * x) * (1.0 / std::sqrt(2.0 * kPi));
      return grad * (cdf + x * pdf);
    }
    case UnaryOp::GeluTanh: {
      constexpr double kCube = 0.044715;
      const double k = std::sqrt(2.0 / kPi);
      const Tensor t = tanh(k * (x + kCube * x * x * x));
      const Tensor inner_slope = k * (1.0 + 3.0 * kCube * x * x);
      return grad * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * inner_slope);
    }
    case UnaryOp::Pow: {
      const double p = scalars.first;
      if (p == 0) return zeros_like(grad);
      return grad * (p * pow(x, p - 1));
    }
    case UnaryOp::Sin: return grad * cos(x);
    case UnaryOp::Cos: return grad * -sin(x);
    case UnaryOp::Tan: return grad * (1.0 + out * out);
    case UnaryOp::Asin: return grad / sqrt(1.0 - x * x);
    case UnaryOp::Acos: return -grad / sqrt(1.0 - x * x);
    case UnaryOp::Atan: return grad / (1.0 + x * x);
    case UnaryOp::Sinh: return grad * cosh(x);
    case UnaryOp::Cosh: return grad * sinh(x);
    case UnaryOp::Exp2: return grad * (out * kLn2);
    case UnaryOp::Expm1: return grad * (out + 1.0);
    case UnaryOp::Log1p: return grad / (x + 1.0);
    case UnaryOp::Log2: return grad / (x * kLn2);
    case UnaryOp::Log10: return grad / (x * kLn10);
    case UnaryOp::Erf: return grad * ((2.0 / std::sqrt(kPi)) * exp(-(x * x)));
    case UnaryOp::Erfc: return grad * ((-2.0 / std::sqrt(kPi)) * exp(-(x * x)));
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Trunc:
    case UnaryOp::Round:
    case UnaryOp::Sign: return zeros_like(grad);
    case UnaryOp::Frac: return grad;
    case UnaryOp::Rsqrt: return grad * (-0.5 * out * out * out);
    case UnaryOp::Reciprocal: return grad * -(out * out);
    case UnaryOp::Square: return grad * (2.0 * x);
    case UnaryOp::Silu: {
      const Tensor s = sigmoid(x);
      return grad * (s * (1.0 + x * (1.0 - s)));
    }
    case UnaryOp::LeakyRelu: return where(x > 0.0, grad, grad * scalars.first);
    case UnaryOp::Elu:
      // exp of min(x, 0): the branch where() drops must not overflow (0 * inf is NaN in the
      // second derivative).
      return where(x > 0.0, grad, grad * (scalars.first * exp(clamp_max(x, 0.0))));
    case UnaryOp::ClampMin: return where(x >= scalars.first, grad, 0.0);
    case UnaryOp::ClampMax: return where(x <= scalars.first, grad, 0.0);
    case UnaryOp::Softplus: {
      const double beta = scalars.first, threshold = scalars.second;
      return where(x * beta > threshold, grad, grad * sigmoid(x * beta));
    }
    case UnaryOp::Hardtanh:
      return where(logical_and(x > scalars.first, x < scalars.second), grad, 0.0);
    default: break;
  }
  MINIDL_INTERNAL_ASSERT(false, "unary op ", static_cast<int>(kernel),
                         " has no differentiable derivative");
  return Tensor();
}

// The op of `kernel`'s row applied to x; `scalars` are the op's parameters (pow's exponent,
// leaky_relu's slope, elu's alpha, softplus's beta and threshold; none for the others).
Tensor unary_op(UnaryOp kernel, const Tensor& x, Scalars scalars = {}) {
  const UnaryOpSpec& spec = spec_of(kernel);
  if (spec.accepts == kFloating)
    elementwise::check_floating(x, spec.name);
  else
    elementwise::check_numeric(x, spec.name);
  Tensor out = elementwise::unary_forward(kernel, x, spec.name, scalars);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor kept = spec.keeps == kOutput
                                     ? autograd::SavedTensor::output(out, spec.name)
                                     : autograd::SavedTensor(x, spec.name);
    autograd::record(
        out, spec.node_name, {x},
        [&spec, kept, scalars](const Tensor& grad) {
          // The kernel where no graph is recorded; recorded ops under create_graph.
          if (GradMode::is_enabled())
            return std::vector<Tensor>{
                differentiable_derivative(spec.kernel, grad, kept.get(), scalars)};
          return std::vector<Tensor>{elementwise::binary_forward(spec.derivative, grad, kept.get(),
                                                                 spec.node_name, scalars)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) {
  elementwise::check_numeric(x, "neg");
  Tensor out = elementwise::unary_forward(UnaryOp::Neg, x, "neg");
  if (autograd::needs_grad({x}))
    autograd::record(
        out, "NegBackward", {x}, [](const Tensor& grad) { return std::vector<Tensor>{neg(grad)}; },
        autograd::DoubleBackward::kSupported);
  return out;
}

Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x); }
Tensor gelu(const Tensor& x, std::string_view approximate) {
  MINIDL_CHECK(approximate == "none" || approximate == "tanh",
               "gelu: expected approximate to be 'none' or 'tanh', found '", approximate, "'");
  return unary_op(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}
Tensor pow(const Tensor& x, Scalar exponent) {
  // result_type(x, exponent): an integer tensor with a floating exponent computes in float32,
  // with an integer one stays integer (and has no gradient), as PyTorch's.
  const Tensor base = elementwise::promoted_for(x, exponent, "pow");
  if (base.is_floating_point()) return unary_op(UnaryOp::Pow, base, exponent.to_double());
  elementwise::check_numeric(base, "pow");
  MINIDL_CHECK(exponent.to_double() >= 0, "pow: integers to negative integer powers are not ",
               "allowed (got a ", base.dtype(), " tensor and the exponent ", exponent.to_double(),
               "); convert the tensor to a floating-point dtype first");
  return elementwise::unary_forward(UnaryOp::Pow, base, "pow", exponent.to_double());
}
Tensor sin(const Tensor& x) { return unary_op(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary_op(UnaryOp::Cos, x); }
Tensor tan(const Tensor& x) { return unary_op(UnaryOp::Tan, x); }
Tensor asin(const Tensor& x) { return unary_op(UnaryOp::Asin, x); }
Tensor acos(const Tensor& x) { return unary_op(UnaryOp::Acos, x); }
Tensor atan(const Tensor& x) { return unary_op(UnaryOp::Atan, x); }
Tensor sinh(const Tensor& x) { return unary_op(UnaryOp::Sinh, x); }
Tensor cosh(const Tensor& x) { return unary_op(UnaryOp::Cosh, x); }
Tensor exp2(const Tensor& x) { return unary_op(UnaryOp::Exp2, x); }
Tensor expm1(const Tensor& x) { return unary_op(UnaryOp::Expm1, x); }
Tensor log1p(const Tensor& x) { return unary_op(UnaryOp::Log1p, x); }
Tensor log2(const Tensor& x) { return unary_op(UnaryOp::Log2, x); }
Tensor log10(const Tensor& x) { return unary_op(UnaryOp::Log10, x); }
Tensor erf(const Tensor& x) { return unary_op(UnaryOp::Erf, x); }
Tensor erfc(const Tensor& x) { return unary_op(UnaryOp::Erfc, x); }
Tensor floor(const Tensor& x) { return unary_op(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return unary_op(UnaryOp::Ceil, x); }
Tensor trunc(const Tensor& x) { return unary_op(UnaryOp::Trunc, x); }
Tensor round(const Tensor& x) { return unary_op(UnaryOp::Round, x); }
Tensor frac(const Tensor& x) { return unary_op(UnaryOp::Frac, x); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::Sign, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::Rsqrt, x); }
Tensor reciprocal(const Tensor& x) { return unary_op(UnaryOp::Reciprocal, x); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::Square, x); }
Tensor silu(const Tensor& x) { return unary_op(UnaryOp::Silu, x); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_op(UnaryOp::LeakyRelu, x, negative_slope);
}
Tensor elu(const Tensor& x, double alpha) { return unary_op(UnaryOp::Elu, x, alpha); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return unary_op(UnaryOp::Softplus, x, Scalars(beta, threshold));
}
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  MINIDL_CHECK(min_val <= max_val, "hardtanh: expected min_val <= max_val, got min_val ", min_val,
               " and max_val ", max_val);
  return unary_op(UnaryOp::Hardtanh, x, Scalars(min_val, max_val));
}
// A bound promotes x as PyTorch's clamp does (result_type(x, bound)): an integer tensor with a
// floating-point bound is clamped in float32.
Tensor clamp_min(const Tensor& x, Scalar min) {
  return unary_op(UnaryOp::ClampMin, elementwise::promoted_for(x, min, "clamp_min"),
                  min.to_double());
}
Tensor clamp_max(const Tensor& x, Scalar max) {
  return unary_op(UnaryOp::ClampMax, elementwise::promoted_for(x, max, "clamp_max"),
                  max.to_double());
}
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  const ProfileScope profile("clamp", {x});  // around the clamp_min and clamp_max below
  MINIDL_CHECK(min || max, "clamp: expected at least one of min and max, got neither");
  // Both bounds take part in the result type, so clamp(int64, 0, 2.5) is float32 throughout.
  Tensor input = x;
  for (const std::optional<Scalar>& bound : {min, max})
    if (bound) input = elementwise::promoted_for(input, *bound, "clamp");
  // Where min > max every element becomes max, as in PyTorch (and its gradient is zero).
  const Tensor above = min ? clamp_min(input, *min) : input;
  return max ? clamp_max(above, *max) : above;
}

}  // namespace minidl
