#pragma once
// The math of the element-wise ops, written once for the CPU loops (ops/cpu/elementwise.cpp) and
// the CUDA kernels (ops/cuda/elementwise.cu).
//
// Conventions:
// - A functor is templated on its compute type C (compute_t<T> of the tensor's element type T):
//   float for float32, float16 and bfloat16 (16-bit values are widened on load and rounded on
//   store), double for float64, and T itself for the integer types and bool.
// - Computing<Out, Op, In...> does the loads and the store around a functor, so a functor only
//   ever sees compute types.
// - Scalars arrive as double (a Scalars pair: most ops use `first` only) and are converted once,
//   when the functor is built (scalar_as).
// - Backward functors take the incoming gradient first, then what the forward saved.
// - The op enums name the functors for the launchers, whose signatures stay non-template;
//   with_*_functor maps an enum to its functor for one element type, and only instantiates the
//   functors that the element type supports (the op layer has already checked the dtype).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "minidl/core/dtype.h"
#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::elementwise {

// ---- element types ----

template <class T>
inline constexpr bool is_floating_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                      std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool is_integer_v =
    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>;

template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double,
                                     std::conditional_t<is_floating_v<T>, float, T>>;

// A double scalar as compute type C; integers go through int64 so that negative values wrap
// for uint8 (as PyTorch's uint8 arithmetic does) instead of being undefined.
template <class C>
C scalar_as(double value) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<int64_t>(value));
  else
    return static_cast<C>(value);
}

// An op's scalar operands: most ops have at most one (pow's exponent, add's alpha, elu's alpha),
// softplus (beta, threshold) and hardtanh (min_val, max_val) two. A double converts implicitly,
// so the one-scalar call sites pass theirs as it is.
struct Scalars {
  double first = 0;
  double second = 0;
  Scalars(double first_scalar = 0, double second_scalar = 0)
      : first(first_scalar), second(second_scalar) {}
};

template <class Out, class Op, class... In>
struct Computing {
  Op op;
  MINIDL_HOST_DEVICE Out operator()(In... values) const {
    return static_cast<Out>(op(static_cast<compute_t<In>>(values)...));
  }
};

// ---- libm in float or double, on host and device ----

namespace detail {
// detail::name(x): libm's name in double, namef in float (the same spelling on the device).
#define MINIDL_LIBM_UNARY(name)             \
  template <class C>                        \
  MINIDL_HOST_DEVICE C name(C x) {          \
    if constexpr (std::is_same_v<C, float>) \
      return ::name##f(x);                  \
    else                                    \
      return ::name(x);                     \
  }
MINIDL_LIBM_UNARY(exp)
MINIDL_LIBM_UNARY(exp2)
MINIDL_LIBM_UNARY(expm1)
MINIDL_LIBM_UNARY(log)
MINIDL_LIBM_UNARY(log1p)
MINIDL_LIBM_UNARY(log2)
MINIDL_LIBM_UNARY(log10)
MINIDL_LIBM_UNARY(sqrt)
MINIDL_LIBM_UNARY(sin)
MINIDL_LIBM_UNARY(cos)
MINIDL_LIBM_UNARY(tan)
MINIDL_LIBM_UNARY(asin)
MINIDL_LIBM_UNARY(acos)
MINIDL_LIBM_UNARY(atan)
MINIDL_LIBM_UNARY(sinh)
MINIDL_LIBM_UNARY(cosh)
MINIDL_LIBM_UNARY(tanh)
MINIDL_LIBM_UNARY(erf)
MINIDL_LIBM_UNARY(erfc)
MINIDL_LIBM_UNARY(floor)
MINIDL_LIBM_UNARY(ceil)
MINIDL_LIBM_UNARY(trunc)
MINIDL_LIBM_UNARY(rint)  // to nearest, ties to even (the default rounding mode): torch.round
#undef MINIDL_LIBM_UNARY
// detail::name(x, y): libm's two-argument name in double, namef in float.
#define MINIDL_LIBM_BINARY(name)            \
  template <class C>                        \
  MINIDL_HOST_DEVICE C name(C x, C y) {     \
    if constexpr (std::is_same_v<C, float>) \
      return ::name##f(x, y);               \
    else                                    \
      return ::name(x, y);                  \
  }
MINIDL_LIBM_BINARY(pow)
MINIDL_LIBM_BINARY(atan2)
MINIDL_LIBM_BINARY(fmod)
#undef MINIDL_LIBM_BINARY
template <class C>
MINIDL_HOST_DEVICE bool is_nan(C x) {
  return x != x;  // false for every integer
}

inline constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
inline constexpr double kInvSqrtTwoPi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
inline constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
inline constexpr double kLnTwo = 0.69314718055994530942;
inline constexpr double kLnTen = 2.30258509299404568402;
}  // namespace detail

// ---- unary ----

template <class C>
struct Neg {
  MINIDL_HOST_DEVICE C operator()(C x) const { return static_cast<C>(-x); }
};
template <class C>
struct Abs {
  MINIDL_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else
      return x < C(0) ? static_cast<C>(-x) : x;
  }
};
template <class C>
struct Exp {
  MINIDL_HOST_DEVICE C operator()(C x) const { return detail::exp(x); }
};
template <class C>
struct Log {
  MINIDL_HOST_DEVICE C operator()(C x) const { return detail::log(x); }
};
template <class C>
struct Sqrt {
  MINIDL_HOST_DEVICE C operator()(C x) const { return detail::sqrt(x); }
};
template <class C>
struct Relu {  // NaN stays NaN, as torch.relu
  MINIDL_HOST_DEVICE C operator()(C x) const { return x < C(0) ? C(0) : x; }
};
template <class C>
struct Sigmoid {
  MINIDL_HOST_DEVICE C operator()(C x) const { return C(1) / (C(1) + detail::exp(-x)); }
};
template <class C>
struct Tanh {
  MINIDL_HOST_DEVICE C operator()(C x) const { return detail::tanh(x); }
};
template <class C>
struct Gelu {  // x * Phi(x), Phi the standard normal CDF
  MINIDL_HOST_DEVICE C operator()(C x) const {
    return x * C(0.5) * (C(1) + detail::erf(x * C(detail::kSqrtHalf)));
  }
};
// GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in PyTorch's
// order of operations (approximate='tanh').
inline constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // sqrt(2 / pi)
inline constexpr double kGeluTanhCubic = 0.044715;
template <class C>
struct GeluTanh {
  MINIDL_HOST_DEVICE C operator()(C x) const {
    const C inner = C(kSqrtTwoOverPi) * (x + C(kGeluTanhCubic) * (x * x * x));
    return C(0.5) * x * (C(1) + detail::tanh(inner));
  }
};
// name(x) = detail::name(x), for the libm functions that are ops as they are.
#define MINIDL_LIBM_FUNCTOR(Name, name)                                    \
  template <class C>                                                       \
  struct Name {                                                            \
    MINIDL_HOST_DEVICE C operator()(C x) const { return detail::name(x); } \
  };
MINIDL_LIBM_FUNCTOR(Sin, sin)
MINIDL_LIBM_FUNCTOR(Cos, cos)
MINIDL_LIBM_FUNCTOR(Tan, tan)
MINIDL_LIBM_FUNCTOR(Asin, asin)
MINIDL_LIBM_FUNCTOR(Acos, acos)
MINIDL_LIBM_FUNCTOR(Atan, atan)
MINIDL_LIBM_FUNCTOR(Sinh, sinh)
MINIDL_LIBM_FUNCTOR(Cosh, cosh)
MINIDL_LIBM_FUNCTOR(Exp2, exp2)
MINIDL_LIBM_FUNCTOR(Expm1, expm1)
MINIDL_LIBM_FUNCTOR(Log1p, log1p)
MINIDL_LIBM_FUNCTOR(Log2, log2)
MINIDL_LIBM_FUNCTOR(Log10, log10)
MINIDL_LIBM_FUNCTOR(Erf, erf)
MINIDL_LIBM_FUNCTOR(Erfc, erfc)
MINIDL_LIBM_FUNCTOR(Floor, floor)
MINIDL_LIBM_FUNCTOR(Ceil, ceil)
MINIDL_LIBM_FUNCTOR(Trunc, trunc)
MINIDL_LIBM_FUNCTOR(Round, rint)
#undef MINIDL_LIBM_FUNCTOR
template <class C>
struct Frac {  // x - trunc(x), the sign of x
  MINIDL_HOST_DEVICE C operator()(C x) const { return x - detail::trunc(x); }
};
template <class C>
struct Rsqrt {
  MINIDL_HOST_DEVICE C operator()(C x) const { return C(1) / detail::sqrt(x); }
};
template <class C>
struct Reciprocal {
  MINIDL_HOST_DEVICE C operator()(C x) const { return C(1) / x; }
};
template <class C>
struct Square {
  MINIDL_HOST_DEVICE C operator()(C x) const { return x * x; }
};
template <class C>
struct Sign {  // -1, 0 or 1; 0 for NaN, as torch.sign
  MINIDL_HOST_DEVICE C operator()(C x) const { return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0)); }
};
template <class C>
struct Silu {  // x * sigmoid(x)
  MINIDL_HOST_DEVICE C operator()(C x) const { return x / (C(1) + detail::exp(-x)); }
};
template <class C>
struct LeakyRelu {
  C negative_slope;
  MINIDL_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : x * negative_slope; }
};
template <class C>
struct ClampMin {  // NaN stays NaN, as torch.clamp
  C min;
  MINIDL_HOST_DEVICE C operator()(C x) const { return x < min ? min : x; }
};
template <class C>
struct ClampMax {
  C max;
  MINIDL_HOST_DEVICE C operator()(C x) const { return x > max ? max : x; }
};
template <class C>
struct Elu {
  C alpha;
  MINIDL_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : alpha * detail::expm1(x); }
};
// softplus(x) = log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (where the two
// agree to the dtype's precision), in PyTorch's order of operations.
template <class C>
struct Softplus {
  C beta, threshold;
  MINIDL_HOST_DEVICE C operator()(C x) const {
    return x * beta > threshold ? x : detail::log1p(detail::exp(x * beta)) / beta;
  }
};
template <class C>
struct Hardtanh {  // clamp(x, min_val, max_val); NaN stays NaN, as torch's
  C min_val, max_val;
  MINIDL_HOST_DEVICE C operator()(C x) const {
    if (x < min_val) return min_val;
    return x > max_val ? max_val : x;
  }
};
template <class C>
struct Pow {
  C exponent;
  MINIDL_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      // Integers: exact, by squaring, wrapping on overflow as PyTorch's; the op layer refuses a
      // negative exponent ("Integers to negative integer powers are not allowed").
      C result = 1, base = x;
      for (C e = exponent; e > C(0); e /= C(2)) {
        if (e % C(2) == C(1)) result = static_cast<C>(result * base);
        base = static_cast<C>(base * base);
      }
      return result;
    } else {
      if (exponent == C(2)) return x * x;  // the common case, exact and cheap
      return detail::pow(x, exponent);
    }
  }
};
template <class C>
struct AddScalar {
  C value;
  MINIDL_HOST_DEVICE C operator()(C x) const { return static_cast<C>(x + value); }
};
template <class C>
struct MulScalar {
  C value;
  MINIDL_HOST_DEVICE C operator()(C x) const { return static_cast<C>(x * value); }
};
template <class C>
struct DivScalar {
  C value;
  MINIDL_HOST_DEVICE C operator()(C x) const { return x / value; }
};

// ---- binary ----

template <class C>
struct Add {  // a + alpha * b; sub is add with -alpha
  C alpha;
  MINIDL_HOST_DEVICE C operator()(C a, C b) const { return static_cast<C>(a + alpha * b); }
};
template <class C>
struct Mul {
  MINIDL_HOST_DEVICE C operator()(C a, C b) const { return static_cast<C>(a * b); }
};
template <class C>
struct Div {
  MINIDL_HOST_DEVICE C operator()(C a, C b) const { return a / b; }
};
template <class C>
struct Maximum {  // NaN wins, as torch.maximum
  MINIDL_HOST_DEVICE C operator()(C a, C b) const {
    if (detail::is_nan(a)) return a;
    if (detail::is_nan(b)) return b;
    return a > b ? a : b;
  }
};
template <class C>
struct Minimum {
  MINIDL_HOST_DEVICE C operator()(C a, C b) const {
    if (detail::is_nan(a)) return a;
    if (detail::is_nan(b)) return b;
    return a < b ? a : b;
  }
};

template <class C>
struct Atan2 {  // the angle of the point (x = b, y = a), in [-pi, pi]
  MINIDL_HOST_DEVICE C operator()(C a, C b) const { return detail::atan2(a, b); }
};
// Integer fmod and remainder: the op layer refuses a zero divisor on the CPU (PyTorch raises
// ZeroDivisionError there); on CUDA, which cannot raise without waiting for the device, a zero
// divisor gives 0 instead of the hardware's undefined result. A divisor of -1 gives 0 without
// dividing, since INT_MIN % -1 overflows (and traps on x86).
template <class C>
MINIDL_HOST_DEVICE C integer_fmod(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return b == C(0) ? C(0) : static_cast<C>(a % b);
}
template <class C>
struct Fmod {  // a - trunc(a / b) * b: the sign of a, as C's fmod
  MINIDL_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return integer_fmod(a, b);
    else
      return detail::fmod(a, b);
  }
};
template <class C>
struct Remainder {  // a - floor(a / b) * b: the sign of b, as Python's %; PyTorch's formula
  MINIDL_HOST_DEVICE C operator()(C a, C b) const {
    C mod;
    if constexpr (std::is_integral_v<C>)
      mod = integer_fmod(a, b);
    else
      mod = detail::fmod(a, b);
    if constexpr (std::is_unsigned_v<C>)
      return mod;  // both operands are non-negative
    else
      return mod != C(0) && ((b < C(0)) != (mod < C(0))) ? static_cast<C>(mod + b) : mod;
  }
};

// ---- backward of the unary ops: (grad, saved) -> grad_input ----

template <class C>
struct ReluBackward {  // saved: relu's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return out > C(0) ? grad : C(0); }
};
template <class C>
struct SigmoidBackward {  // saved: sigmoid's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad * out * (C(1) - out); }
};
template <class C>
struct TanhBackward {  // saved: tanh's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad * (C(1) - out * out); }
};
template <class C>
struct GeluBackward {  // saved: gelu's input; d/dx x*Phi(x) = Phi(x) + x*phi(x)
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    const C cdf = C(0.5) * (C(1) + detail::erf(x * C(detail::kSqrtHalf)));
    const C pdf = C(detail::kInvSqrtTwoPi) * detail::exp(C(-0.5) * x * x);
    return grad * (cdf + x * pdf);
  }
};
template <class C>
struct GeluTanhBackward {  // saved: the input; the derivative of GeluTanh, as PyTorch writes it
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    const C x_squared = x * x;
    const C inner = C(kSqrtTwoOverPi) * (x + C(kGeluTanhCubic) * (x_squared * x));
    const C t = detail::tanh(inner);
    const C inner_derivative = C(kSqrtTwoOverPi) * (C(1) + C(3) * C(kGeluTanhCubic) * x_squared);
    return grad * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * inner_derivative);
  }
};
template <class C>
struct SqrtBackward {  // saved: sqrt's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad / (C(2) * out); }
};
template <class C>
struct AbsBackward {  // saved: abs's input; grad * sign(x)
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    return x > C(0) ? grad : (x < C(0) ? -grad : C(0));
  }
};
template <class C>
struct PowBackward {  // saved: pow's input; grad * p * x^(p-1), and 0 for p == 0 as PyTorch
  C exponent;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    if (exponent == C(0)) return C(0);
    return grad * exponent * detail::pow(x, exponent - C(1));
  }
};

template <class C>
struct SinBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad * detail::cos(x); }
};
template <class C>
struct CosBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return -grad * detail::sin(x); }
};
template <class C>
struct TanBackward {  // saved: tan's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad * (C(1) + out * out); }
};
template <class C>
struct AsinBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad / detail::sqrt(C(1) - x * x); }
};
template <class C>
struct AcosBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return -grad / detail::sqrt(C(1) - x * x); }
};
template <class C>
struct AtanBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad / (C(1) + x * x); }
};
template <class C>
struct SinhBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad * detail::cosh(x); }
};
template <class C>
struct CoshBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad * detail::sinh(x); }
};
template <class C>
struct Exp2Backward {  // saved: exp2's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad * out * C(detail::kLnTwo); }
};
template <class C>
struct Expm1Backward {  // saved: expm1's output
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad * (out + C(1)); }
};
template <class C>
struct Log1pBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad / (x + C(1)); }
};
template <class C>
struct Log2Backward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad / (x * C(detail::kLnTwo)); }
};
template <class C>
struct Log10Backward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad / (x * C(detail::kLnTen)); }
};
template <class C>
struct ErfBackward {  // saved: the input; 2 / sqrt(pi) * exp(-x^2)
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    return grad * C(detail::kTwoOverSqrtPi) * detail::exp(-x * x);
  }
};
template <class C>
struct ErfcBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    return -grad * C(detail::kTwoOverSqrtPi) * detail::exp(-x * x);
  }
};
template <class C>
struct RsqrtBackward {  // saved: rsqrt's output; -1/2 x^(-3/2)
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return grad * C(-0.5) * out * out * out; }
};
template <class C>
struct ReciprocalBackward {  // saved: the output; -1/x^2
  MINIDL_HOST_DEVICE C operator()(C grad, C out) const { return -grad * out * out; }
};
template <class C>
struct SquareBackward {  // saved: the input
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return grad * C(2) * x; }
};
template <class C>
struct SiluBackward {  // saved: the input; s * (1 + x * (1 - s)), s = sigmoid(x)
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    const C s = C(1) / (C(1) + detail::exp(-x));
    return grad * s * (C(1) + x * (C(1) - s));
  }
};
template <class C>
struct LeakyReluBackward {  // saved: the input
  C negative_slope;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    return x > C(0) ? grad : grad * negative_slope;
  }
};
template <class C>
struct EluBackward {  // saved: the input
  C alpha;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    return x > C(0) ? grad : grad * alpha * detail::exp(x);
  }
};
template <class C>
struct SoftplusBackward {  // saved: the input; sigmoid(beta x), and 1 past the threshold
  C beta, threshold;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    const C z = detail::exp(x * beta);
    return x * beta > threshold ? grad : grad * z / (z + C(1));
  }
};
template <class C>
struct HardtanhBackward {  // saved: the input; passes strictly inside (min_val, max_val)
  C min_val, max_val;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const {
    return x <= min_val || x >= max_val ? C(0) : grad;
  }
};
template <class C>
struct ClampMinBackward {  // saved: the input; the gradient passes where x >= min (NaN: not)
  C min;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return x >= min ? grad : C(0); }
};
template <class C>
struct ClampMaxBackward {  // saved: the input; the gradient passes where x <= max
  C max;
  MINIDL_HOST_DEVICE C operator()(C grad, C x) const { return x <= max ? grad : C(0); }
};
template <class C>
struct ZeroGradient {  // sign, floor, ceil, round, trunc: zero almost everywhere, as PyTorch
  MINIDL_HOST_DEVICE C operator()(C, C) const { return C(0); }
};
template <class C>
struct PassGradient {  // frac: x - trunc(x) has slope 1 almost everywhere
  MINIDL_HOST_DEVICE C operator()(C grad, C) const { return grad; }
};

// ---- backward of the binary ops: (grad, saved...) -> grad of one input ----

// The gradient of maximum(self, other) for `self`: all of grad where self is larger, half on
// ties, none where smaller (for `other`, call it with the operands swapped).
template <class C>
struct MaximumBackward {
  MINIDL_HOST_DEVICE C operator()(C grad, C self, C other) const {
    if (self == other) return grad * C(0.5);
    return self < other ? C(0) : grad;
  }
};
template <class C>
struct MinimumBackward {
  MINIDL_HOST_DEVICE C operator()(C grad, C self, C other) const {
    if (self == other) return grad * C(0.5);
    return self > other ? C(0) : grad;
  }
};
template <class C>
struct DivBackwardDivisor {  // d(a / b)/db = -a / b^2
  MINIDL_HOST_DEVICE C operator()(C grad, C a, C b) const { return -grad * a / (b * b); }
};
// atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2), as PyTorch writes them.
template <class C>
struct Atan2BackwardInput {
  MINIDL_HOST_DEVICE C operator()(C grad, C a, C b) const {
    const C reciprocal = C(1) / (a * a + b * b);
    return grad * b * reciprocal;
  }
};
template <class C>
struct Atan2BackwardOther {
  MINIDL_HOST_DEVICE C operator()(C grad, C a, C b) const {
    const C reciprocal = C(1) / (a * a + b * b);
    return grad * -a * reciprocal;
  }
};
// fmod(a, b) = a - trunc(a / b) b and remainder(a, b) = a - floor(a / b) b: the quotient is
// piecewise constant, so d/db is minus it (and d/da is 1), as PyTorch's.
template <class C>
struct FmodBackwardDivisor {
  MINIDL_HOST_DEVICE C operator()(C grad, C a, C b) const { return -grad * detail::trunc(a / b); }
};
template <class C>
struct RemainderBackwardDivisor {
  MINIDL_HOST_DEVICE C operator()(C grad, C a, C b) const { return -grad * detail::floor(a / b); }
};

// ---- comparisons (bool result) ----

template <class C>
struct Eq {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a == b; }
};
template <class C>
struct Ne {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a != b; }
};
template <class C>
struct Lt {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a < b; }
};
template <class C>
struct Le {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a <= b; }
};
template <class C>
struct Gt {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a > b; }
};
template <class C>
struct Ge {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a >= b; }
};

// The logical ops: any nonzero value (NaN included) is true, as in PyTorch.
template <class C>
struct LogicalAnd {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a != C(0) && b != C(0); }
};
template <class C>
struct LogicalOr {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return a != C(0) || b != C(0); }
};
template <class C>
struct LogicalXor {
  MINIDL_HOST_DEVICE bool operator()(C a, C b) const { return (a != C(0)) != (b != C(0)); }
};

// A comparison against a scalar: Cmp<S>(x, value) with x widened to S.
template <template <class> class Cmp, class S>
struct CompareScalar {
  S value;
  template <class C>
  MINIDL_HOST_DEVICE bool operator()(C x) const {
    return Cmp<S>{}(static_cast<S>(x), value);
  }
};

// ---- predicates (bool result, one operand of any dtype) ----
// x - x is NaN exactly where x is NaN or infinite, and 0 for every integer and bool.

template <class C>
struct IsNan {
  MINIDL_HOST_DEVICE bool operator()(C x) const { return detail::is_nan(x); }
};
template <class C>
struct IsInf {
  MINIDL_HOST_DEVICE bool operator()(C x) const {
    return !detail::is_nan(x) && detail::is_nan(x - x);
  }
};
template <class C>
struct IsFinite {
  MINIDL_HOST_DEVICE bool operator()(C x) const { return x - x == 0; }
};
template <class C>
struct LogicalNot {
  MINIDL_HOST_DEVICE bool operator()(C x) const { return x == C(0); }
};

// ---- where ----

template <class C>
struct Where {
  MINIDL_HOST_DEVICE C operator()(bool condition, C a, C b) const { return condition ? a : b; }
};

// ---- the op enums, and the functor each names ----

enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  AddScalar,
  MulScalar,  // also on integer types
  Exp,
  Log,
  Sqrt,
  Relu,
  Sigmoid,
  Tanh,
  Gelu,
  GeluTanh,
  Pow,
  DivScalar,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Exp2,
  Expm1,
  Log1p,
  Log2,
  Log10,
  Erf,
  Erfc,
  Floor,
  Ceil,
  Trunc,
  Round,
  Frac,
  Sign,
  Rsqrt,
  Reciprocal,
  Square,
  Silu,
  LeakyRelu,
  Elu,
  ClampMin,  // also on integer types
  ClampMax,  // also on integer types
  Softplus,  // scalars: beta, threshold
  Hardtanh,  // scalars: min_val, max_val
};
enum class BinaryOp : uint8_t {
  Add,
  Mul,
  Maximum,
  Minimum,  // also on integer types
  Div,
  ReluBackward,
  SigmoidBackward,
  TanhBackward,
  GeluBackward,
  GeluTanhBackward,
  SqrtBackward,
  AbsBackward,
  PowBackward,
  SinBackward,
  CosBackward,
  TanBackward,
  AsinBackward,
  AcosBackward,
  AtanBackward,
  SinhBackward,
  CoshBackward,
  Exp2Backward,
  Expm1Backward,
  Log1pBackward,
  Log2Backward,
  Log10Backward,
  ErfBackward,
  ErfcBackward,
  RsqrtBackward,
  ReciprocalBackward,
  SquareBackward,
  SiluBackward,
  LeakyReluBackward,
  EluBackward,
  ZeroGradient,
  PassGradient,
  ClampMinBackward,
  ClampMaxBackward,
  Atan2,
  Fmod,
  Remainder,
  SoftplusBackward,  // scalars: beta, threshold
  HardtanhBackward,  // scalars: min_val, max_val
};
enum class TernaryOp : uint8_t {
  MaximumBackward,
  MinimumBackward,
  DivBackwardDivisor,
  Atan2BackwardInput,
  Atan2BackwardOther,
  FmodBackwardDivisor,
  RemainderBackwardDivisor,
};
// The comparisons, and the logical ops, which also take two operands of one dtype to bool (with
// a scalar: the comparisons only).
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor };
enum class PredicateOp : uint8_t { IsNan, IsInf, IsFinite, LogicalNot };

// Calls fn(functor) with the functor of `op` for element type T. `scalars` are the op's scalar
// operands where it has any (the exponent, the value, add's alpha, softplus's beta and
// threshold), ignored otherwise.
template <class T, class Fn>
void with_unary_functor(UnaryOp op, Scalars scalars, Fn&& fn) {
  using C = compute_t<T>;
  const double scalar = scalars.first;
  if constexpr (is_floating_v<T>) {
    switch (op) {
      case UnaryOp::Exp: return fn(Exp<C>{});
      case UnaryOp::Log: return fn(Log<C>{});
      case UnaryOp::Sqrt: return fn(Sqrt<C>{});
      case UnaryOp::Relu: return fn(Relu<C>{});
      case UnaryOp::Sigmoid: return fn(Sigmoid<C>{});
      case UnaryOp::Tanh: return fn(Tanh<C>{});
      case UnaryOp::Gelu: return fn(Gelu<C>{});
      case UnaryOp::GeluTanh: return fn(GeluTanh<C>{});
      case UnaryOp::DivScalar: return fn(DivScalar<C>{scalar_as<C>(scalar)});
      case UnaryOp::Sin: return fn(Sin<C>{});
      case UnaryOp::Cos: return fn(Cos<C>{});
      case UnaryOp::Tan: return fn(Tan<C>{});
      case UnaryOp::Asin: return fn(Asin<C>{});
      case UnaryOp::Acos: return fn(Acos<C>{});
      case UnaryOp::Atan: return fn(Atan<C>{});
      case UnaryOp::Sinh: return fn(Sinh<C>{});
      case UnaryOp::Cosh: return fn(Cosh<C>{});
      case UnaryOp::Exp2: return fn(Exp2<C>{});
      case UnaryOp::Expm1: return fn(Expm1<C>{});
      case UnaryOp::Log1p: return fn(Log1p<C>{});
      case UnaryOp::Log2: return fn(Log2<C>{});
      case UnaryOp::Log10: return fn(Log10<C>{});
      case UnaryOp::Erf: return fn(Erf<C>{});
      case UnaryOp::Erfc: return fn(Erfc<C>{});
      case UnaryOp::Floor: return fn(Floor<C>{});
      case UnaryOp::Ceil: return fn(Ceil<C>{});
      case UnaryOp::Trunc: return fn(Trunc<C>{});
      case UnaryOp::Round: return fn(Round<C>{});
      case UnaryOp::Frac: return fn(Frac<C>{});
      case UnaryOp::Sign: return fn(Sign<C>{});
      case UnaryOp::Rsqrt: return fn(Rsqrt<C>{});
      case UnaryOp::Reciprocal: return fn(Reciprocal<C>{});
      case UnaryOp::Square: return fn(Square<C>{});
      case UnaryOp::Silu: return fn(Silu<C>{});
      case UnaryOp::LeakyRelu: return fn(LeakyRelu<C>{scalar_as<C>(scalar)});
      case UnaryOp::Elu: return fn(Elu<C>{scalar_as<C>(scalar)});
      case UnaryOp::Softplus:
        return fn(Softplus<C>{scalar_as<C>(scalar), scalar_as<C>(scalars.second)});
      case UnaryOp::Hardtanh:
        return fn(Hardtanh<C>{scalar_as<C>(scalar), scalar_as<C>(scalars.second)});
      default: break;
    }
  }
  if constexpr (is_floating_v<T> || is_integer_v<T>) {
    switch (op) {
      case UnaryOp::Neg: return fn(Neg<C>{});
      case UnaryOp::Abs: return fn(Abs<C>{});
      case UnaryOp::Pow: return fn(Pow<C>{scalar_as<C>(scalar)});
      case UnaryOp::AddScalar: return fn(AddScalar<C>{scalar_as<C>(scalar)});
      case UnaryOp::MulScalar: return fn(MulScalar<C>{scalar_as<C>(scalar)});
      case UnaryOp::ClampMin: return fn(ClampMin<C>{scalar_as<C>(scalar)});
      case UnaryOp::ClampMax: return fn(ClampMax<C>{scalar_as<C>(scalar)});
      default: break;
    }
  }
  MINIDL_INTERNAL_ASSERT(false, "unary op ", static_cast<int>(op), " is not defined for ",
                         dtype_of_v<T>);
}

template <class T, class Fn>
void with_binary_functor(BinaryOp op, Scalars scalars, Fn&& fn) {
  using C = compute_t<T>;
  const double scalar = scalars.first;
  if constexpr (is_floating_v<T>) {
    switch (op) {
      case BinaryOp::Div: return fn(Div<C>{});
      case BinaryOp::ReluBackward: return fn(ReluBackward<C>{});
      case BinaryOp::SigmoidBackward: return fn(SigmoidBackward<C>{});
      case BinaryOp::TanhBackward: return fn(TanhBackward<C>{});
      case BinaryOp::GeluBackward: return fn(GeluBackward<C>{});
      case BinaryOp::GeluTanhBackward: return fn(GeluTanhBackward<C>{});
      case BinaryOp::SqrtBackward: return fn(SqrtBackward<C>{});
      case BinaryOp::AbsBackward: return fn(AbsBackward<C>{});
      case BinaryOp::PowBackward: return fn(PowBackward<C>{scalar_as<C>(scalar)});
      case BinaryOp::SinBackward: return fn(SinBackward<C>{});
      case BinaryOp::CosBackward: return fn(CosBackward<C>{});
      case BinaryOp::TanBackward: return fn(TanBackward<C>{});
      case BinaryOp::AsinBackward: return fn(AsinBackward<C>{});
      case BinaryOp::AcosBackward: return fn(AcosBackward<C>{});
      case BinaryOp::AtanBackward: return fn(AtanBackward<C>{});
      case BinaryOp::SinhBackward: return fn(SinhBackward<C>{});
      case BinaryOp::CoshBackward: return fn(CoshBackward<C>{});
      case BinaryOp::Exp2Backward: return fn(Exp2Backward<C>{});
      case BinaryOp::Expm1Backward: return fn(Expm1Backward<C>{});
      case BinaryOp::Log1pBackward: return fn(Log1pBackward<C>{});
      case BinaryOp::Log2Backward: return fn(Log2Backward<C>{});
      case BinaryOp::Log10Backward: return fn(Log10Backward<C>{});
      case BinaryOp::ErfBackward: return fn(ErfBackward<C>{});
      case BinaryOp::ErfcBackward: return fn(ErfcBackward<C>{});
      case BinaryOp::RsqrtBackward: return fn(RsqrtBackward<C>{});
      case BinaryOp::ReciprocalBackward: return fn(ReciprocalBackward<C>{});
      case BinaryOp::SquareBackward: return fn(SquareBackward<C>{});
      case BinaryOp::SiluBackward: return fn(SiluBackward<C>{});
      case BinaryOp::LeakyReluBackward: return fn(LeakyReluBackward<C>{scalar_as<C>(scalar)});
      case BinaryOp::EluBackward: return fn(EluBackward<C>{scalar_as<C>(scalar)});
      case BinaryOp::ZeroGradient: return fn(ZeroGradient<C>{});
      case BinaryOp::PassGradient: return fn(PassGradient<C>{});
      case BinaryOp::ClampMinBackward: return fn(ClampMinBackward<C>{scalar_as<C>(scalar)});
      case BinaryOp::ClampMaxBackward: return fn(ClampMaxBackward<C>{scalar_as<C>(scalar)});
      case BinaryOp::Atan2: return fn(Atan2<C>{});
      case BinaryOp::SoftplusBackward:
        return fn(SoftplusBackward<C>{scalar_as<C>(scalar), scalar_as<C>(scalars.second)});
      case BinaryOp::HardtanhBackward:
        return fn(HardtanhBackward<C>{scalar_as<C>(scalar), scalar_as<C>(scalars.second)});
      default: break;
    }
  }
  if constexpr (is_floating_v<T> || is_integer_v<T>) {
    switch (op) {
      case BinaryOp::Add: return fn(Add<C>{scalar_as<C>(scalar)});
      case BinaryOp::Mul: return fn(Mul<C>{});
      case BinaryOp::Maximum: return fn(Maximum<C>{});
      case BinaryOp::Minimum: return fn(Minimum<C>{});
      case BinaryOp::Fmod: return fn(Fmod<C>{});
      case BinaryOp::Remainder: return fn(Remainder<C>{});
      default: break;
    }
  }
  MINIDL_INTERNAL_ASSERT(false, "binary op ", static_cast<int>(op), " is not defined for ",
                         dtype_of_v<T>);
}

template <class T, class Fn>
void with_ternary_functor(TernaryOp op, Fn&& fn) {
  using C = compute_t<T>;
  if constexpr (is_floating_v<T>) {
    switch (op) {
      case TernaryOp::MaximumBackward: return fn(MaximumBackward<C>{});
      case TernaryOp::MinimumBackward: return fn(MinimumBackward<C>{});
      case TernaryOp::DivBackwardDivisor: return fn(DivBackwardDivisor<C>{});
      case TernaryOp::Atan2BackwardInput: return fn(Atan2BackwardInput<C>{});
      case TernaryOp::Atan2BackwardOther: return fn(Atan2BackwardOther<C>{});
      case TernaryOp::FmodBackwardDivisor: return fn(FmodBackwardDivisor<C>{});
      case TernaryOp::RemainderBackwardDivisor: return fn(RemainderBackwardDivisor<C>{});
    }
  }
  MINIDL_INTERNAL_ASSERT(false, "ternary op ", static_cast<int>(op), " is not defined for ",
                         dtype_of_v<T>);
}

// Tensor-tensor comparisons compare in the compute type; every dtype is accepted.
template <class T, class Fn>
void with_compare_functor(CompareOp op, Fn&& fn) {
  using C = compute_t<T>;
  switch (op) {
    case CompareOp::Eq: return fn(Eq<C>{});
    case CompareOp::Ne: return fn(Ne<C>{});
    case CompareOp::Lt: return fn(Lt<C>{});
    case CompareOp::Le: return fn(Le<C>{});
    case CompareOp::Gt: return fn(Gt<C>{});
    case CompareOp::Ge: return fn(Ge<C>{});
    case CompareOp::LogicalAnd: return fn(LogicalAnd<C>{});
    case CompareOp::LogicalOr: return fn(LogicalOr<C>{});
    case CompareOp::LogicalXor: return fn(LogicalXor<C>{});
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown comparison ", static_cast<int>(op));
}

// Tensor-scalar comparisons: floating-point tensors compare in their compute type (the scalar
// rounded to it, as PyTorch); integer and bool tensors compare in double, so that 2 < 2.5 holds.
template <class T, class Fn>
void with_compare_scalar_functor(CompareOp op, double scalar, Fn&& fn) {
  using S = std::conditional_t<is_floating_v<T>, compute_t<T>, double>;
  const S value = static_cast<S>(scalar);
  switch (op) {
    case CompareOp::Eq: return fn(CompareScalar<Eq, S>{value});
    case CompareOp::Ne: return fn(CompareScalar<Ne, S>{value});
    case CompareOp::Lt: return fn(CompareScalar<Lt, S>{value});
    case CompareOp::Le: return fn(CompareScalar<Le, S>{value});
    case CompareOp::Gt: return fn(CompareScalar<Gt, S>{value});
    case CompareOp::Ge: return fn(CompareScalar<Ge, S>{value});
    case CompareOp::LogicalAnd:
    case CompareOp::LogicalOr:
    case CompareOp::LogicalXor: break;  // no scalar form
  }
  MINIDL_INTERNAL_ASSERT(false, "comparison ", static_cast<int>(op), " has no scalar form");
}

// The predicates take every dtype.
template <class T, class Fn>
void with_predicate_functor(PredicateOp op, Fn&& fn) {
  using C = compute_t<T>;
  switch (op) {
    case PredicateOp::IsNan: return fn(IsNan<C>{});
    case PredicateOp::IsInf: return fn(IsInf<C>{});
    case PredicateOp::IsFinite: return fn(IsFinite<C>{});
    case PredicateOp::LogicalNot: return fn(LogicalNot<C>{});
  }
  MINIDL_INTERNAL_ASSERT(false, "unknown predicate ", static_cast<int>(op));
}

}  // namespace minidl::elementwise
