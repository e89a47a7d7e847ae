#pragma once
// Note [Vectorisable exp and erf on the CPU]: glibc's expf and erff are scalar calls, which
// no compiler vectorises (libmvec's versions need -ffast-math), so float exp, sigmoid, silu and
// gelu ran at a quarter of the memory bandwidth or less (bench_elementwise: exp 71 ms and gelu
// 297 ms for 16M float32 elements on 2 threads, PyTorch's exp 40 ms into a preallocated
// output). These are branch-free float versions that the loops of ops/cpu/elementwise.cpp
// vectorise (4 lanes on the baseline, 8 in its AVX2 version, 16 in its AVX-512 one; the files are
// compiled with -fno-trapping-math, without which GCC 12 vectorises them for AVX-512 only: Note
// [Loops compiled for AVX-512 and AVX2] in ops/cpu/vector_versions.h):
// - exp: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, a degree-7 polynomial for e^r
//   (Cephes' expf coefficients), and 2^n put into the exponent bits in two halves, so that
//   subnormal results and overflow to inf come out right. Within 2 ulps of the exact value;
//   NaN stays NaN, -inf gives 0.
// - erf: Abramowitz and Stegun's 7.1.26, 1 - (a1 t + ... + a5 t^5) e^(-x^2), t = 1 / (1 + p |x|),
//   the same approximation as PyTorch's vectorised CPU erf (so gelu's values follow PyTorch's);
//   absolute error below 1.5e-7 in exact arithmetic, 5e-7 in float
//   (tests/ops/vectorisable_math_test.cpp).
// Only float is computed this way (float16 and bfloat16 through float); float64 keeps libm.
#include <bit>
#include <cstdint>

namespace minidl::cpu {

inline float vectorisable_exp(float x) {
  // Beyond these, e^x is inf resp. rounds to 0 in float; a NaN fails both tests and stays.
  x = x > 88.8f ? 88.8f : x;
  x = x < -104.0f ? -104.0f : x;
  // n = round(x / ln2), by adding 1.5 * 2^23: n is then the low bits of the sum.
  constexpr float kMagic = 12582912.0f;
  const float shifted = x * 1.44269504088896341f + kMagic;
  const float n = shifted - kMagic;
  const int32_t n_bits = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kMagic);
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = (p * r) * r + r + 1.0f;
  // 2^n as 2^half * 2^(n - half): each factor is a normal float for n in [-151, 129].
  const int32_t half = n_bits / 2;
  const float first = std::bit_cast<float>((half + 127) << 23);
  const float second = std::bit_cast<float>((n_bits - half + 127) << 23);
  return e_r * first * second;
}

inline float vectorisable_erf(float x) {
  const float a = x < 0.0f ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float magnitude = 1.0f - p * t * vectorisable_exp(-a * a);
  return x < 0.0f ? -magnitude : magnitude;
}

// The CPU's float functors of exp, sigmoid, silu and gelu (erf's form), and of silu's and gelu's
// derivatives, in place of ops/elementwise_math.h's libm ones (the same formulas in the same
// order); CUDA keeps those.
struct VectorisableExp {
  float operator()(float x) const { return vectorisable_exp(x); }
};
struct VectorisableSigmoid {
  float operator()(float x) const { return 1.0f / (1.0f + vectorisable_exp(-x)); }
};
struct VectorisableSilu {
  float operator()(float x) const { return x / (1.0f + vectorisable_exp(-x)); }
};
struct VectorisableGelu {  // x * Phi(x) = x / 2 (1 + erf(x / sqrt 2)), in PyTorch's order
  float operator()(float x) const {
    return x * 0.5f * (1.0f + vectorisable_erf(x * 0.70710678118654752440f));
  }
};
struct VectorisableSiluBackward {  // grad * s (1 + x (1 - s)), s = sigmoid(x): SiluBackward
  float operator()(float grad, float x) const {
    const float s = 1.0f / (1.0f + vectorisable_exp(-x));
    return grad * s * (1.0f + x * (1.0f - s));
  }
};
struct VectorisableGeluBackward {  // grad * (Phi(x) + x phi(x)): GeluBackward
  float operator()(float grad, float x) const {
    const float cdf = 0.5f * (1.0f + vectorisable_erf(x * 0.70710678118654752440f));
    const float pdf = 0.39894228040143267794f * vectorisable_exp(-0.5f * x * x);
    return grad * (cdf + x * pdf);
  }
};

}  // namespace minidl::cpu
