#pragma once
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
// per-element draws built on it. Everything here is MINIDL_HOST_DEVICE: the CPU loops and the
// CUDA kernels call the same functions, which is what makes CPU and CUDA values agree.
//
// Note [Philox counters in minidl]
//   A random op reserves a range of counters [offset, offset + numel) from the generator
//   (core/generator.h). Element i of the call (in row-major logical order) runs Philox once on
//   the 128-bit counter {lo32(offset + i), hi32(offset + i), 0, 0} with key
//   {lo32(seed), hi32(seed)} and takes its random bits from those four 32-bit words only. So an
//   element's value depends on (seed, offset + i) and nothing else: not on the device, the
//   thread count or the launch configuration. Uniform draws use words 0-1, normal draws all
//   four (two 53-bit uniforms for Box-Muller). Each call reserves numel counters rounded up to
//   a multiple of 4, as PyTorch rounds its Philox offsets.
#include <cmath>
#include <cstdint>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::philox {

struct Key {
  uint32_t k0, k1;
};
struct Block {  // a counter going in, four random words coming out
  uint32_t w0, w1, w2, w3;
};

// Multipliers and Weyl key increments from the Random123 reference implementation.
inline constexpr uint32_t kMultiplier0 = 0xD2511F53u;
inline constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
inline constexpr uint32_t kKeyIncrement0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kKeyIncrement1 = 0xBB67AE85u;  // sqrt(3) - 1
inline constexpr int kRounds = 10;

MINIDL_HOST_DEVICE void multiply_high_low(uint32_t a, uint32_t b, uint32_t& high, uint32_t& low) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  high = static_cast<uint32_t>(product >> 32);
  low = static_cast<uint32_t>(product);
}

MINIDL_HOST_DEVICE Block round(Block c, Key k) {
  uint32_t high0, low0, high1, low1;
  multiply_high_low(kMultiplier0, c.w0, high0, low0);
  multiply_high_low(kMultiplier1, c.w2, high1, low1);
  return {high1 ^ c.w1 ^ k.k0, low1, high0 ^ c.w3 ^ k.k1, low0};
}

// Philox-4x32-10: ten rounds, the key bumped between them.
MINIDL_HOST_DEVICE Block philox4x32_10(Block counter, Key key) {
  for (int r = 0; r < kRounds - 1; ++r) {
    counter = round(counter, key);
    key.k0 += kKeyIncrement0;
    key.k1 += kKeyIncrement1;
  }
  return round(counter, key);
}

// The four words of element `index` (offset + i) under `seed`; see Note [Philox counters in
// minidl].
MINIDL_HOST_DEVICE Block element_words(uint64_t seed, uint64_t index) {
  const Block counter{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u};
  const Key key{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return philox4x32_10(counter, key);
}

// ---- draws: random words -> values ----

MINIDL_HOST_DEVICE uint64_t join(uint32_t high, uint32_t low) {
  return (static_cast<uint64_t>(high) << 32) | low;
}

// k * 2^-bits for the top `bits` bits of `word`: uniform on [0, 1) and exactly representable in
// a type with `bits` significant bits, so converting it can never round up to 1.
// bits: 24 for float, 53 for double, 11 for half, 8 for bfloat16.
template <int bits>
MINIDL_HOST_DEVICE double uniform_bits_to_unit(uint64_t word) {
  static_assert(bits > 0 && bits <= 53, "a double holds at most 53 significant bits");
  const double scale = 1.0 / static_cast<double>(uint64_t{1} << bits);
  return static_cast<double>(word >> (64 - bits)) * scale;
}

// A standard normal from element words by Box-Muller, computed in double so that float results
// from the CPU and from CUDA agree except where libm and CUDA round a double differently in the
// last place (invisible after rounding to float in all but rare ties).
MINIDL_HOST_DEVICE double standard_normal(const Block& words) {
  // u1 in (0, 1] so that log(u1) is finite; u2 in [0, 1).
  const double u1 = (static_cast<double>(join(words.w0, words.w1) >> 11) + 1.0) * 0x1p-53;
  const double u2 = static_cast<double>(join(words.w2, words.w3) >> 11) * 0x1p-53;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return sqrt(-2.0 * log(u1)) * cos(kTwoPi * u2);
}

// a * b + c rounded twice (no fused multiply-add), on the host and on the device alike, so
// that scaled uniforms are bit-identical across the two: nvcc would otherwise contract this
// into an FMA on the device only.
MINIDL_HOST_DEVICE float multiply_add_unfused(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  // Two statements: GCC in ISO mode and Clang's default contract only within one expression.
  const float product = a * b;
  return product + c;
#endif
}
MINIDL_HOST_DEVICE double multiply_add_unfused(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  const double product = a * b;
  return product + c;
#endif
}

// ---- typed draws for the floating-point dtypes (float, double, Half, BFloat16) ----

template <class T>
struct DrawTraits;
template <>
struct DrawTraits<float> {
  using Compute = float;
  static constexpr int kDigits = 24;
};
template <>
struct DrawTraits<double> {
  using Compute = double;
  static constexpr int kDigits = 53;
};
template <>
struct DrawTraits<Half> {
  using Compute = float;
  static constexpr int kDigits = 11;
};
template <>
struct DrawTraits<BFloat16> {
  using Compute = float;
  static constexpr int kDigits = 8;
};

// Element `index` of a uniform draw on [low, high). `span` is high - low in T's compute type.
// Where rounding to T lands on `high`, the value becomes `low`, as PyTorch's uniform_ does, so
// the interval stays half-open.
template <class T>
MINIDL_HOST_DEVICE T uniform_element(uint64_t seed, uint64_t index,
                                     typename DrawTraits<T>::Compute low,
                                     typename DrawTraits<T>::Compute span,
                                     typename DrawTraits<T>::Compute high) {
  using Compute = typename DrawTraits<T>::Compute;
  const Block words = element_words(seed, index);
  const uint64_t bits = join(words.w0, words.w1);
  const auto unit = static_cast<Compute>(uniform_bits_to_unit<DrawTraits<T>::kDigits>(bits));
  const T value = static_cast<T>(multiply_add_unfused(unit, span, low));
  return static_cast<Compute>(value) >= high ? static_cast<T>(low) : value;
}

// Element `index` of a normal(mean, std) draw.
template <class T>
MINIDL_HOST_DEVICE T normal_element(uint64_t seed, uint64_t index, double mean, double std) {
  const double z = standard_normal(element_words(seed, index));
  const double value = multiply_add_unfused(z, std, mean);
  if constexpr (DrawTraits<T>::kDigits == 53)
    return value;
  else
    return static_cast<T>(static_cast<float>(value));
}

}  // namespace minidl::philox
