#pragma once
// Element-wise operations. Binary ones broadcast (NumPy rules) on one device; the arithmetic,
// extrema, atan2, fmod, remainder, clamp, comparisons and where promote mixed dtypes as PyTorch
// (core/type_promotion.h), scalars (core/scalar.h) by the C++ type they are written as: an int64
// tensor + 2 stays int64, + 2.0 is float32. Floating-point ops accept float32, float64 (CPU),
// float16 and bfloat16 (an integer or bool input of atan2, div and pow with a floating exponent
// computes in float32); add/sub/mul, fmod, remainder, pow with an integer exponent, clamp and the
// comparisons also accept integer types. Every op here is differentiable where PyTorch's is.
#include <optional>
#include <string_view>

#include "minidl/core/scalar.h"
#include "minidl/core/tensor.h"

namespace minidl {

// ---- unary ----
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// x * Phi(x) (approximate "none"), or 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
// (approximate "tanh", GPT-2's), as torch.nn.functional.gelu.
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
// An integer tensor with an integer exponent stays integer (a negative one is an error, as
// PyTorch's); with a floating exponent it computes in float32.
Tensor pow(const Tensor& x, Scalar exponent);
// Trigonometric and hyperbolic, in radians.
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
// Exponentials, logarithms and the error function.
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);  // exp(x) - 1, exact near 0
Tensor log1p(const Tensor& x);  // log(1 + x), exact near 0
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
// Rounding: gradient zero almost everywhere (frac's is one), as PyTorch's.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor round(const Tensor& x);  // half to even, as torch.round
Tensor frac(const Tensor& x);   // x - trunc(x)
Tensor sign(const Tensor& x);   // -1, 0 or 1 (0 for NaN, as torch.sign)
// Powers and activations.
Tensor rsqrt(const Tensor& x);  // 1 / sqrt(x)
Tensor reciprocal(const Tensor& x);
Tensor square(const Tensor& x);
Tensor silu(const Tensor& x);  // x * sigmoid(x)
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);  // x > 0 ? x : alpha * (exp(x) - 1)
// softplus: log(1 + exp(beta x)) / beta, and x where beta x > threshold (torch's softplus).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// clamp(x, min_val, max_val), with zero gradient at and beyond the bounds (torch's hardtanh);
// min_val > max_val is an error.
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
// Bounds as scalars, on floating and integer tensors; the result type is PyTorch's (an integer
// tensor with a floating bound is float32: clamp(arange(3), 0.5) is [0.5, 1, 2]); NaN stays NaN;
// the gradient passes where min <= x <= max, as PyTorch's.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor clamp_min(const Tensor& x, Scalar min);
Tensor clamp_max(const Tensor& x, Scalar max);
// Bounds as tensors (either may be std::nullopt, not both), broadcast with x, on x's device, of
// any numeric dtype (the three promote as PyTorch's): minimum(maximum(x, min), max) in value and
// gradient, as PyTorch's (a tie splits the gradient evenly between x and the bound; where
// min > max the result is max).
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max);
// clamp(x, min, std::nullopt) and clamp(x, std::nullopt, max), as torch.clamp_min and
// torch.clamp_max with a tensor bound.
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, const Tensor& max);

// ---- binary, with broadcasting ----
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1);  // a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1);  // a - alpha * b
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // gradient split evenly on ties, as PyTorch
Tensor minimum(const Tensor& a, const Tensor& b);
// atan2(input, other): the angle of the point (other, input), in [-pi, pi]; integer and bool
// operands give float32. fmod: input - trunc(input / other) * other, the sign of input (C's
// fmod); remainder: input - floor(input / other) * other, the sign of other (Python's %); both
// on floating and integer operands (an integer divisor of 0 is an error on the CPU, as PyTorch's
// "ZeroDivisionError", and gives 0 on CUDA). Their gradient is 1 for input and
// -trunc(input / other) resp. -floor(input / other) for other, as PyTorch's.
Tensor atan2(const Tensor& input, const Tensor& other);
Tensor fmod(const Tensor& input, const Tensor& other);
Tensor remainder(const Tensor& input, const Tensor& other);

// ---- with a scalar ----
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor fmod(const Tensor& input, Scalar other);
Tensor remainder(const Tensor& input, Scalar other);

// ---- comparisons: bool result, never differentiable ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);

// ---- classification and logic: bool result, any dtype, never differentiable ----
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);     // +inf or -inf
Tensor isfinite(const Tensor& x);  // neither NaN nor infinite; true for every integer and bool
// Nonzero (NaN included) is true. The binary ones broadcast, and take operands of different
// dtypes (each then read as bool), on one device.
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);

// condition ? a : b, broadcasting all three; condition is a bool tensor. The operands promote as
// PyTorch's, a scalar with the tensor operand (where(c, int64 tensor, 2.5) is float32).
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, Scalar b);
Tensor where(const Tensor& condition, Scalar a, const Tensor& b);

// ---- C++ operators ----
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor operator==(Scalar a, const Tensor& b);
Tensor operator!=(Scalar a, const Tensor& b);
Tensor operator<(Scalar a, const Tensor& b);
Tensor operator<=(Scalar a, const Tensor& b);
Tensor operator>(Scalar a, const Tensor& b);
Tensor operator>=(Scalar a, const Tensor& b);

}  // namespace minidl
