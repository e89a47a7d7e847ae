#pragma once
// The draws of multinomial, randint and bernoulli (ops/random.h) from Philox words, written
// once as MINIDL_HOST_DEVICE functions for ops/cpu/random.cpp and ops/cuda/random.cu, so a seed
// gives the same values on both (Note [Philox counters in minidl], core/philox.h). Each draw
// reads the words of one counter, `index` = the call's offset + the draw's position.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"
#include "minidl/core/philox.h"

namespace minidl::random_math {

// A uniform double on [0, 1) from words 0-1 of counter `index`: a multiple of 2^-53.
MINIDL_HOST_DEVICE double unit_uniform(uint64_t seed, uint64_t index) {
  const philox::Block words = philox::element_words(seed, index);
  return static_cast<double>(philox::join(words.w0, words.w1) >> 11) * 0x1p-53;
}

// A weight as double: 16-bit floats through float.
template <class T>
MINIDL_HOST_DEVICE double weight_value(T weight) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return static_cast<double>(static_cast<float>(weight));
  else
    return static_cast<double>(weight);
}

// Note [Multinomial draws]
//   With replacement, sample s of row r takes the uniform u of counter offset + r * samples + s
//   and returns the first category whose running sum of weights (in double, in category
//   order, the same additions on both backends) exceeds u * total: inverse-CDF sampling.
//   Without replacement, category c of row r gets the key -log(u) / w_c from the uniform u in
//   (0, 1] of counter offset + r * categories + c: an exponential race (the exponential-clock
//   form of the Gumbel-top-k trick), whose smallest keys, in order, are distributed as
//   draws one by one without replacement, each in proportion to the remaining weights. A zero
//   weight gets +inf and is never drawn before a positive one. A single draw takes the race's
//   winner in either mode (one pass over the row in parallel, not a walk along it).

// Sample of a row of `categories` weights summing (in order, in double) to `total` > 0, for
// the uniform `u` in [0, 1).
template <class T>
MINIDL_HOST_DEVICE int64_t inverse_cdf_category(const T* weights, int64_t categories, double total,
                                                double u) {
  const double target = u * total;
  double running = 0;
  int64_t last_positive = 0;
  for (int64_t c = 0; c < categories; ++c) {
    const double weight = weight_value(weights[c]);
    if (weight <= 0) continue;
    running += weight;
    last_positive = c;
    if (running > target) return c;
  }
  return last_positive;  // unreachable for u < 1, kept for rounding's sake
}

// The sum of a row's weights in category order, in double: what inverse_cdf_category expects.
template <class T>
MINIDL_HOST_DEVICE double weight_total(const T* weights, int64_t categories) {
  double total = 0;
  for (int64_t c = 0; c < categories; ++c) {
    const double weight = weight_value(weights[c]);
    if (weight > 0) total += weight;
  }
  return total;
}

// The exponential-race key of a weight, from counter `index` (Note [Multinomial draws]).
// Computed in double and rounded once to float, so that the backends agree except where
// their double log differs in the last place and the rounding to float exposes it.
MINIDL_HOST_DEVICE float exponential_race_key(double weight, uint64_t seed, uint64_t index) {
  if (!(weight > 0)) return std::numeric_limits<float>::infinity();
  const double u_open_closed = 1.0 - unit_uniform(seed, index);  // (0, 1]: log is finite
  return static_cast<float>(-log(u_open_closed) / weight);
}

// An integer uniform on [low, low + range), range >= 1, from the 64 bits of words 0-1
// (modulo: the bias is below range / 2^64).
MINIDL_HOST_DEVICE int64_t random_integer(uint64_t seed, uint64_t index, int64_t low,
                                          uint64_t range) {
  const philox::Block words = philox::element_words(seed, index);
  const uint64_t bits = philox::join(words.w0, words.w1);
  return static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range);
}

// 1 with probability p (the uniform of counter `index` is below p), else 0.
MINIDL_HOST_DEVICE bool bernoulli_draw(uint64_t seed, uint64_t index, double p) {
  return unit_uniform(seed, index) < p;
}

}  // namespace minidl::random_math
