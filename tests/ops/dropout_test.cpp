// Dropout on the CPU: the fraction of zeros against a binomial bound, scaling, reproducibility
// from the seed, the mask being the documented Philox draw, backward reusing the forward's mask,
// the p == 0 / p == 1 / evaluation shortcuts, errors, and an f64 gradient check.
#include "minidl/ops/dropout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/generator.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

TEST(Dropout, FractionOfZerosIsNearPWithinTheBinomialSpread) {
  const int64_t n = 1 << 20;
  for (double p : {0.1, 0.3, 0.5, 0.9}) {
    manual_seed(17);
    const std::vector<float> y = to_vector<float>(dropout(ones({n}), p, /*training=*/true));
    int64_t zeros_seen = 0;
    for (float v : y) zeros_seen += v == 0.0f;
    // The zero count is Binomial(n, p): within 5 standard deviations of n * p.
    const double spread = std::sqrt(static_cast<double>(n) * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(zeros_seen), static_cast<double>(n) * p, 5 * spread)
        << "p " << p;
  }
}

TEST(Dropout, SurvivorsAreScaledByOneOverOneMinusP) {
  const double p = 0.25;
  const Tensor x = arange(1, 4097, 1, kFloat32);
  manual_seed(3);
  const std::vector<float> y = to_vector<float>(dropout(x, p, true));
  const std::vector<float> input = to_vector<float>(x);
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0.0f) continue;
    ++kept;
    EXPECT_EQ(y[i], input[i] * scale) << "element " << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, static_cast<int64_t>(y.size()));
}

TEST(Dropout, TheSameSeedGivesTheSameMaskAndSuccessiveCallsDiffer) {
  const Tensor x = ones({1000});
  manual_seed(42);
  const Tensor first = dropout(x, 0.5, true);
  const Tensor second = dropout(x, 0.5, true);  // later counters: another mask
  manual_seed(42);
  const Tensor again = dropout(x, 0.5, true);
  EXPECT_TRUE(all_close(again, first, 0, 0));
  EXPECT_FALSE(all_close(second, first, 0, 0));
  // Each call reserves its numel counters from the generator.
  manual_seed(42);
  const uint64_t before = default_generator().state().offset;
  dropout(x, 0.5, true);
  EXPECT_EQ(default_generator().state().offset, before + 1000);
}

TEST(Dropout, MaskIsThePhiloxUniformOfEachElementsCounter) {
  // p = 0.25 lies on float's 2^-24 grid, so u >= p gives the same answer for rand's 24-bit
  // uniform as for dropout's 53-bit one drawn from the same counter.
  const int64_t n = 5000;
  manual_seed(11);
  const std::vector<float> uniform = to_vector<float>(rand({n}));
  manual_seed(11);
  const std::vector<float> y = to_vector<float>(dropout(ones({n}), 0.25, true));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i] != 0.0f, uniform[i] >= 0.25f) << "element " << i;
}

TEST(Dropout, BackwardUsesTheForwardMaskEvenAfterReseeding) {
  const double p = 0.4;
  const Tensor x = ones({2000}, TensorOptions(kFloat64).requires_grad());
  manual_seed(5);
  const Tensor y = dropout(x, p, true);
  manual_seed(12345);  // backward must not draw again
  y.backward(full({2000}, 3.0, kFloat64));
  // Where y kept x (= 1), it holds 1 / (1 - p), and the gradient is 3 / (1 - p); elsewhere 0.
  EXPECT_TRUE(all_close(x.grad(), y * 3.0, 1e-15, 1e-15));
  EXPECT_GT(sum(x.grad()).item<double>(), 0.0);
}

TEST(Dropout, NonContiguousInputIsMaskedInRowMajorOrder) {
  const Tensor x = arange(0, 60, 1, kFloat32).view({6, 10});
  const Tensor transposed = x.t();
  manual_seed(8);
  const Tensor from_view = dropout(transposed, 0.5, true);
  manual_seed(8);
  const Tensor from_copy = dropout(transposed.contiguous(), 0.5, true);
  EXPECT_TRUE(all_close(from_view, from_copy, 0, 0));
}

TEST(Dropout, EvaluationAndPZeroReturnTheInputAndPOneGivesZeros) {
  const Tensor x = arange(1, 9, 1, kFloat32).requires_grad_();
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  const Tensor all_dropped = dropout(x, 1.0, true);
  EXPECT_EQ(to_vector<float>(all_dropped), std::vector<float>(8, 0.0f));
  all_dropped.sum().backward();
  EXPECT_EQ(to_vector<float>(x.grad()), std::vector<float>(8, 0.0f));
  // p == 1 multiplies by zero, as PyTorch: NaN stays NaN.
  const Tensor nan = full({2}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(to_vector<float>(dropout(nan, 1.0, true))[0]));
}

TEST(Dropout, SixteenBitInputsScaleInFloatAndRoundOnce) {
  const Tensor x = full({512}, 0.3, kFloat16);
  manual_seed(9);
  const std::vector<float> y = to_vector<float>(dropout(x, 0.5, true));
  const float expected = static_cast<float>(Half(static_cast<float>(Half(0.3f)) * 2.0f));
  for (float v : y) EXPECT_TRUE(v == 0.0f || v == expected) << v;
  EXPECT_EQ(dropout(x.to(kBFloat16), 0.5, true).dtype(), kBFloat16);
}

TEST(Dropout, BadArgumentsAreErrorsNamingTheOp) {
  const Tensor x = ones({4});
  EXPECT_ERROR_CONTAINS(dropout(x, 1.5, true),
                        "dropout: expected a probability p in [0, 1], got 1.5");
  EXPECT_ERROR_CONTAINS(dropout(x, -0.1, false),
                        "dropout: expected a probability p in [0, 1], got -0.1");
  EXPECT_ERROR_CONTAINS(dropout(x, std::numeric_limits<double>::quiet_NaN(), true),
                        "dropout: expected a probability p in [0, 1], got nan");
  EXPECT_ERROR_CONTAINS(dropout(arange(4), 0.5, true),
                        "dropout: expected a floating-point input (float32, float64, float16 or "
                        "bfloat16), got int64");
}

TEST(DropoutGradcheck, FixedSeedResetInsideEveryEvaluation) {
  // gradcheck evaluates fn many times; reseeding inside fn gives every evaluation the same mask,
  // so the function being differentiated is fixed.
  const Tensor x = arange(1, 31, 1, kFloat64).view({5, 6}).requires_grad_();
  auto result = gradcheck(
      [](const std::vector<Tensor>& in) {
        manual_seed(2024);
        return dropout(in[0].t(), 0.4, true);
      },
      {x});
  EXPECT_TRUE(result) << result.message;
}

}  // namespace
}  // namespace minidl
