#include "minidl/ops/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "minidl/core/generator.h"
#include "minidl/core/philox.h"
#include "test_util.h"

namespace minidl {
namespace {

// ---- the Philox core ----

// Known answers from Random123's kat_vectors (Salmon et al., SC'11): counter, key, output.
TEST(Philox, MatchesRandom123KnownAnswers) {
  struct KnownAnswer {
    philox::Block counter;
    philox::Key key;
    philox::Block expected;
  };
  const KnownAnswer answers[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const KnownAnswer& answer : answers) {
    const philox::Block out = philox::philox4x32_10(answer.counter, answer.key);
    EXPECT_EQ(out.w0, answer.expected.w0);
    EXPECT_EQ(out.w1, answer.expected.w1);
    EXPECT_EQ(out.w2, answer.expected.w2);
    EXPECT_EQ(out.w3, answer.expected.w3);
  }
}

TEST(Philox, ElementWordsUseTheIndexAsCounterAndTheSeedAsKey) {
  const uint64_t seed = 0x299f31d0a4093822ull, index = 0x85a308d3243f6a88ull;
  const philox::Block direct =
      philox::philox4x32_10({0x243f6a88, 0x85a308d3, 0, 0}, {0xa4093822, 0x299f31d0});
  const philox::Block words = philox::element_words(seed, index);
  EXPECT_EQ(words.w0, direct.w0);
  EXPECT_EQ(words.w3, direct.w3);
}

TEST(Philox, UniformBitsAreExactlyRepresentableAndBelowOne) {
  const uint64_t all_ones = ~uint64_t{0};
  EXPECT_EQ(philox::uniform_bits_to_unit<24>(0), 0.0);
  EXPECT_EQ(static_cast<float>(philox::uniform_bits_to_unit<24>(all_ones)), 1.0f - 0x1p-24f);
  EXPECT_EQ(philox::uniform_bits_to_unit<53>(all_ones), 1.0 - 0x1p-53);
  EXPECT_EQ(
      static_cast<float>(Half(static_cast<float>(philox::uniform_bits_to_unit<11>(all_ones)))),
      1.0f - 0x1p-11f);
  EXPECT_EQ(
      static_cast<float>(BFloat16(static_cast<float>(philox::uniform_bits_to_unit<8>(all_ones)))),
      1.0f - 0x1p-8f);
}

// ---- the generator ----

TEST(Generator, ReserveAdvancesByTheCountRoundedUpToFour) {
  PhiloxGenerator generator(7);
  EXPECT_EQ(generator.reserve(5), (GeneratorState{7, 0}));
  EXPECT_EQ(generator.reserve(4), (GeneratorState{7, 8}));
  EXPECT_EQ(generator.reserve(0), (GeneratorState{7, 12}));
  EXPECT_EQ(generator.state(), (GeneratorState{7, 12}));
  generator.manual_seed(9);
  EXPECT_EQ(generator.state(), (GeneratorState{9, 0}));
}

TEST(Generator, ConcurrentReservationsNeverOverlap) {
  PhiloxGenerator generator(1);
  constexpr int kThreads = 4, kPerThread = 1000;
  std::vector<std::vector<uint64_t>> offsets(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) offsets[t].push_back(generator.reserve(3).offset);
    });
  for (std::thread& thread : threads) thread.join();
  std::vector<uint64_t> all;
  for (const auto& list : offsets) all.insert(all.end(), list.begin(), list.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], 4 * i);
}

TEST(Generator, SetStateRejectsAnUnalignedOffset) {
  PhiloxGenerator generator;
  EXPECT_ERROR_CONTAINS(generator.set_state({1, 6}),
                        "expected an offset that is a multiple of 4, got 6");
}

// ---- rand, randn, uniform_, normal_ ----

TEST(Random, SameSeedGivesSameValuesAndDifferentSeedsDiffer) {
  manual_seed(42);
  const std::vector<float> first = to_vector<float>(rand({1000}));
  const std::vector<float> second_call = to_vector<float>(rand({1000}));
  manual_seed(42);
  EXPECT_EQ(to_vector<float>(rand({1000})), first);
  EXPECT_EQ(to_vector<float>(rand({1000})), second_call);
  EXPECT_NE(first, second_call);  // the offset moved on
  manual_seed(43);
  EXPECT_NE(to_vector<float>(rand({1000})), first);
}

TEST(Random, ElementValuesDependOnlyOnSeedAndCounter) {
  // rand({10}) then rand({5}) under one seed draws counters [0, 10) and [12, 17).
  manual_seed(5);
  (void)rand({10});
  const std::vector<float> later = to_vector<float>(rand({5}));
  for (int i = 0; i < 5; ++i) {
    const float expected = philox::uniform_element<float>(5, 12 + i, 0.0f, 1.0f, 1.0f);
    EXPECT_EQ(later[i], expected) << "element " << i;
  }
  EXPECT_EQ(default_generator().state(), (GeneratorState{5, 20}));
}

// Sample mean and variance; bounds are 6 standard errors, so a correct generator fails about
// once in 10^8 runs (and the seed is fixed anyway).
struct Moments {
  double mean = 0, variance = 0;
};
Moments moments_of(const std::vector<double>& values) {
  Moments m;
  for (double v : values) m.mean += v;
  m.mean /= static_cast<double>(values.size());
  for (double v : values) m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= static_cast<double>(values.size() - 1);
  return m;
}

TEST(Random, RandIsUniformOnZeroOne) {
  constexpr int64_t n = 100000;
  manual_seed(1234);
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<double> values = to_vector<double>(rand({n}, dtype));
    EXPECT_GE(*std::min_element(values.begin(), values.end()), 0.0);
    EXPECT_LT(*std::max_element(values.begin(), values.end()), 1.0);
    // Uniform[0,1): mean 1/2, variance 1/12; the standard error of the mean is sqrt(1/12/n) and
    // of the variance sqrt((1/80 - 1/144)/n) (fourth central moment 1/80). bfloat16 keeps only
    // 8 bits, which lowers the mean by up to 2^-9: add that to its bound.
    const Moments m = moments_of(values);
    const double quantisation = dtype == kBFloat16 ? 0x1p-9 : dtype == kFloat16 ? 0x1p-12 : 0.0;
    EXPECT_NEAR(m.mean, 0.5, 6 * std::sqrt(1.0 / 12 / n) + quantisation);
    EXPECT_NEAR(m.variance, 1.0 / 12, 6 * std::sqrt((1.0 / 80 - 1.0 / 144) / n) + quantisation);
  }
}

TEST(Random, RandnIsStandardNormal) {
  constexpr int64_t n = 100000;
  manual_seed(99);
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<double> values = to_vector<double>(randn({n}, dtype));
    // N(0,1): standard error of the mean 1/sqrt(n), of the variance sqrt(2/n).
    const Moments m = moments_of(values);
    EXPECT_NEAR(m.mean, 0.0, 6 / std::sqrt(double(n)));
    EXPECT_NEAR(m.variance, 1.0, 6 * std::sqrt(2.0 / n) + (dtype == kBFloat16 ? 0.01 : 0.0));
    for (double v : values) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(Random, UniformStaysInItsRangeAndNormalHasItsMoments) {
  constexpr int64_t n = 100000;
  manual_seed(3);
  Tensor u = empty({n});
  uniform_(u, -2.0, 3.0);
  const std::vector<double> uniform_values = to_vector<double>(u);
  EXPECT_GE(*std::min_element(uniform_values.begin(), uniform_values.end()), -2.0);
  EXPECT_LT(*std::max_element(uniform_values.begin(), uniform_values.end()), 3.0);
  EXPECT_NEAR(moments_of(uniform_values).mean, 0.5, 6 * 5 * std::sqrt(1.0 / 12 / n));

  Tensor g = empty({n}, kFloat64);
  normal_(g, 10.0, 0.5);
  const Moments m = moments_of(to_vector<double>(g));
  EXPECT_NEAR(m.mean, 10.0, 6 * 0.5 / std::sqrt(double(n)));
  EXPECT_NEAR(m.variance, 0.25, 6 * 0.25 * std::sqrt(2.0 / n));
}

TEST(Random, UniformWithEqualBoundsGivesTheBound) {
  Tensor t = empty({8}, kBFloat16);
  uniform_(t, 0.25, 0.25);
  EXPECT_EQ(to_vector<float>(t), std::vector<float>(8, 0.25f));
}

TEST(Random, NonContiguousTargetIsFilledInLogicalOrder) {
  manual_seed(11);
  const std::vector<float> contiguous = to_vector<float>(rand({3, 4}));
  manual_seed(11);
  Tensor target = zeros({4, 3}).t();  // (3, 4), strides (1, 3)
  uniform_(target, 0, 1);
  EXPECT_EQ(to_vector<float>(target), contiguous);
}

TEST(Random, InPlaceDrawsBumpTheVersion) {
  Tensor t = empty({4});
  const uint64_t before = t.version();
  normal_(t);
  EXPECT_GT(t.version(), before);
}

TEST(Random, RequiresGradIsHonoured) {
  EXPECT_TRUE(randn({2}, TensorOptions().requires_grad()).requires_grad());
  EXPECT_FALSE(rand({2}).requires_grad());
}

TEST(Random, BadArgumentsAreErrors) {
  EXPECT_ERROR_CONTAINS(rand({2}, kInt64), "rand: expected a floating-point tensor");
  Tensor ints = zeros({2}, kInt32);
  EXPECT_ERROR_CONTAINS(uniform_(ints), "uniform_: expected a floating-point tensor");
  Tensor t = empty({2});
  EXPECT_ERROR_CONTAINS(uniform_(t, 1.0, 0.0),
                        "expected finite bounds with low <= high, got [1, 0)");
  EXPECT_ERROR_CONTAINS(normal_(t, 0.0, -1.0), "std >= 0, got mean 0 and std -1");
}

// ---- multinomial, randint, bernoulli, normal ----

// |count - n p| within 5 standard deviations of a binomial(n, p): fails by chance with
// probability below 1e-6 per check, and the seed is fixed anyway.
::testing::AssertionResult within_binomial_bound(int64_t count, int64_t n, double p) {
  const double expected = static_cast<double>(n) * p;
  const double bound = 5.0 * std::sqrt(static_cast<double>(n) * p * (1.0 - p));
  if (std::abs(static_cast<double>(count) - expected) <= bound)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << count << " of " << n << " draws, expected " << expected << " +- " << bound;
}

std::vector<int64_t> category_counts(const std::vector<int64_t>& drawn, int64_t categories) {
  std::vector<int64_t> counts(static_cast<size_t>(categories), 0);
  for (int64_t c : drawn) ++counts.at(static_cast<size_t>(c));
  return counts;
}

TEST(Multinomial, WithReplacementFrequenciesFollowTheWeights) {
  manual_seed(11);
  // Unnormalised weights 1 : 0 : 2 : 3 : 4 over 100k draws.
  const Tensor weights = tensor({1.0, 0.0, 2.0, 3.0, 4.0});
  const Tensor drawn = multinomial(weights, 100000, /*replacement=*/true);
  EXPECT_EQ(drawn.sizes(), (Shape{100000}));
  EXPECT_EQ(drawn.dtype(), kInt64);
  const std::vector<int64_t> counts = category_counts(to_vector<int64_t>(drawn), 5);
  EXPECT_EQ(counts[1], 0);  // a zero weight is never drawn
  const double total = 10.0;
  for (int64_t c : {0, 2, 3, 4}) {
    const double weight = to_vector<double>(weights)[static_cast<size_t>(c)];
    EXPECT_TRUE(within_binomial_bound(counts[c], 100000, weight / total)) << "category " << c;
  }
}

TEST(Multinomial, OneDrawPerRowFollowsTheWeightsInEitherMode) {
  // 100k rows of weights 1 : 0 : 2 : 3 : 4, one draw each (the exponential race's winner).
  const int64_t rows = 100000;
  const Tensor weights = tensor({1.0f, 0.0f, 2.0f, 3.0f, 4.0f}).unsqueeze(0).expand({rows, 5});
  for (bool replacement : {true, false}) {
    manual_seed(13);
    const Tensor drawn = multinomial(weights, 1, replacement);
    ASSERT_EQ(drawn.sizes(), (Shape{rows, 1}));
    const std::vector<int64_t> counts = category_counts(to_vector<int64_t>(drawn), 5);
    EXPECT_EQ(counts[1], 0);
    for (int64_t c : {0, 2, 3, 4}) {
      const double p = (c == 0 ? 1.0 : static_cast<double>(c)) / 10.0;
      EXPECT_TRUE(within_binomial_bound(counts[c], rows, p)) << "category " << c;
    }
    manual_seed(13);
    EXPECT_EQ(to_vector<int64_t>(multinomial(weights, 1, !replacement)), to_vector<int64_t>(drawn))
        << "one draw is the same in both modes";
  }
}

TEST(Multinomial, WithoutReplacementDrawsInOrderWithoutRepeats) {
  manual_seed(12);
  // 50k rows of weights 1 : 2 : 3 : 4, two draws each: the first is drawn in proportion to the
  // weights, the second in proportion to those left.
  const int64_t rows = 50000;
  const std::vector<double> weight = {0.1, 0.2, 0.3, 0.4};
  const Tensor weights = tensor({1.0f, 2.0f, 3.0f, 4.0f}).unsqueeze(0).expand({rows, 4});
  const Tensor drawn = multinomial(weights, 2);
  ASSERT_EQ(drawn.sizes(), (Shape{rows, 2}));
  const std::vector<int64_t> pairs = to_vector<int64_t>(drawn);
  std::vector<int64_t> first(4, 0), second(4, 0);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_NE(pairs[2 * r], pairs[2 * r + 1]) << "row " << r;
    ++first.at(pairs[2 * r]);
    ++second.at(pairs[2 * r + 1]);
  }
  for (int64_t c = 0; c < 4; ++c) {
    EXPECT_TRUE(within_binomial_bound(first[c], rows, weight[c])) << "first draw, category " << c;
    double p_second = 0;  // sum over the first draw i != c of p_i p_c / (1 - p_i)
    for (int64_t i = 0; i < 4; ++i)
      if (i != c) p_second += weight[i] * weight[c] / (1.0 - weight[i]);
    EXPECT_TRUE(within_binomial_bound(second[c], rows, p_second)) << "second draw, category " << c;
  }
}

TEST(Multinomial, AllCategoriesWithoutReplacementIsAPermutationOfThePositiveOnes) {
  manual_seed(3);
  const Tensor drawn = multinomial(tensor({0.5, 0.0, 2.0, 1.0}, kBFloat16).unsqueeze(0), 3);
  std::vector<int64_t> sorted = to_vector<int64_t>(drawn);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int64_t>{0, 2, 3}));
}

TEST(Multinomial, ASeedRepeatsTheDraws) {
  const Tensor weights = tensor({0.3, 0.1, 0.6, 0.2, 0.9, 0.4}, kFloat32).view({2, 3});
  for (bool replacement : {false, true}) {
    manual_seed(77);
    const std::vector<int64_t> first = to_vector<int64_t>(multinomial(weights, 3, replacement));
    const std::vector<int64_t> next = to_vector<int64_t>(multinomial(weights, 3, replacement));
    manual_seed(77);
    EXPECT_EQ(to_vector<int64_t>(multinomial(weights, 3, replacement)), first);
    EXPECT_EQ(to_vector<int64_t>(multinomial(weights, 3, replacement)), next);
  }
}

TEST(Multinomial, DrawsDoNotDependOnTheThreadCount) {
  // 512 rows of 40 draws: several tasks of whole rows (ops/cpu/random.cpp).
  const Tensor weights = rand({512, 50});
  std::vector<int64_t> threaded, single;
  {
    testing::ScopedThreadCount four_threads(4);
    manual_seed(5);
    threaded = to_vector<int64_t>(multinomial(weights, 40, true));
  }
  {
    testing::ScopedThreadCount one_thread(1);
    manual_seed(5);
    single = to_vector<int64_t>(multinomial(weights, 40, true));
  }
  EXPECT_EQ(single, threaded);
}

TEST(Multinomial, BadArgumentsAreErrorsAsPyTorchs) {
  const Tensor weights = tensor({0.2, 0.8});
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.2, -0.1}), 1),
                        "multinomial: probability tensor "
                        "contains either inf, nan or "
                        "element < 0");
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.2, INFINITY}), 1), "contains either inf, nan");
  EXPECT_ERROR_CONTAINS(multinomial(tensor({NAN, 0.2}), 1), "contains either inf, nan");
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.5, 0.5, 0.0, 0.0}).view({2, 2}), 1),
                        "sum of probabilities <= 0");
  EXPECT_ERROR_CONTAINS(multinomial(weights, 3), "cannot sample num_samples > probs.size(-1)");
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.2, 0.0, 0.8}), 3),
                        "not enough non-negative category to sample");
  EXPECT_ERROR_CONTAINS(multinomial(weights, 0), "cannot sample num_samples <= 0");
  EXPECT_ERROR_CONTAINS(multinomial(ones({2, 2, 2}), 1), "expected probs of 1 or 2 dims");
  EXPECT_ERROR_CONTAINS(multinomial(ones({4}, kInt64), 1), "multinomial: expected a floating");
  EXPECT_ERROR_CONTAINS(multinomial(Tensor(), 1), "argument 'probs' is an undefined tensor");
  EXPECT_EQ(to_vector<int64_t>(multinomial(tensor({0.2, 0.0, 0.8}), 5, true)).size(), 5u);
}

TEST(Randint, StaysInRangeAndIsUniform) {
  manual_seed(21);
  const Tensor drawn = randint(-3, 7, {100000});
  EXPECT_EQ(drawn.dtype(), kInt64);
  const std::vector<int64_t> values = to_vector<int64_t>(drawn);
  std::vector<int64_t> counts(10, 0);
  for (int64_t v : values) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 7);
    ++counts[static_cast<size_t>(v + 3)];
  }
  for (int64_t c = 0; c < 10; ++c)
    EXPECT_TRUE(within_binomial_bound(counts[c], 100000, 0.1)) << "value " << c - 3;
}

TEST(Randint, HighOnlyDtypesSeedsAndErrors) {
  manual_seed(4);
  const Tensor small = randint(5, {2, 3}, kInt32);
  EXPECT_EQ(small.dtype(), kInt32);
  EXPECT_EQ(small.sizes(), (Shape{2, 3}));
  for (int32_t v : to_vector<int32_t>(small)) EXPECT_TRUE(v >= 0 && v < 5);
  manual_seed(4);
  EXPECT_EQ(to_vector<int32_t>(randint(0, 5, {2, 3}, kInt32)), to_vector<int32_t>(small));
  // The widest range does not overflow.
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  const int64_t highest = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(randint(lowest, highest, {8}).numel(), 8);
  EXPECT_ERROR_CONTAINS(randint(3, 3, {2}), "randint: expected low < high, got the range [3, 3)");
  EXPECT_ERROR_CONTAINS(randint(0, 2, {2}, kBool), "randint: expected a numeric dtype");
}

TEST(Bernoulli, OnesWithProbabilityP) {
  manual_seed(8);
  const int64_t n = 100000;
  Tensor p = full({n}, 0.3);
  const Tensor drawn = bernoulli(p);
  EXPECT_EQ(drawn.dtype(), kFloat32);
  const std::vector<float> values = to_vector<float>(drawn);
  int64_t ones_drawn = 0;
  for (float v : values) {
    ASSERT_TRUE(v == 0.0f || v == 1.0f);
    ones_drawn += v == 1.0f;
  }
  EXPECT_TRUE(within_binomial_bound(ones_drawn, n, 0.3));
  EXPECT_EQ(to_vector<double>(bernoulli(tensor({0.0, 1.0, 0.0, 1.0}, kFloat64))),
            (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(bernoulli(full({3}, 0.5, kBFloat16)).dtype(), kBFloat16);
  EXPECT_ERROR_CONTAINS(bernoulli(tensor({0.5, 1.5})),
                        "bernoulli: expected probabilities in [0, 1]");
  EXPECT_ERROR_CONTAINS(bernoulli(ones({2}, kInt64)), "bernoulli: expected a floating");
}

TEST(Normal, IsRandnScaledAndShifted) {
  manual_seed(9);
  const std::vector<double> standard = to_vector<double>(randn({1000}, kFloat64));
  manual_seed(9);
  const std::vector<double> scaled = to_vector<double>(normal(2.0, 3.0, {1000}, kFloat64));
  for (size_t i = 0; i < standard.size(); ++i)
    EXPECT_NEAR(scaled[i], 2.0 + 3.0 * standard[i], 1e-12);
  manual_seed(9);
  const std::vector<float> standard_float = to_vector<float>(randn({64}));
  manual_seed(9);
  EXPECT_EQ(to_vector<float>(normal(0.0, 1.0, {64})), standard_float);
  EXPECT_ERROR_CONTAINS(normal(0.0, -1.0, {2}), "normal: expected a finite mean and a finite std");
}

TEST(Random, LikeFactoriesTakeShapeDtypeAndDevice) {
  const Tensor like = zeros({2, 5}, kBFloat16);
  EXPECT_EQ(rand_like(like).sizes(), (Shape{2, 5}));
  EXPECT_EQ(rand_like(like).dtype(), kBFloat16);
  EXPECT_EQ(randn_like(like).dtype(), kBFloat16);
  EXPECT_ERROR_CONTAINS(rand_like(zeros({2}, kInt64)), "rand: expected a floating-point tensor");
}

}  // namespace
}  // namespace minidl
