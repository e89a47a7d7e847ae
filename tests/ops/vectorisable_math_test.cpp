// The CPU's vectorisable exp and erf (ops/cpu/vectorisable_math.h, Note [Vectorisable exp and
// erf on the CPU]) against double-precision libm over their whole float range: exp within 2 ulps
// (subnormal results and overflow included), erf within 5e-7, and the special values; silu's and
// gelu's derivatives built on them against their formulas in double.
#include "minidl/ops/cpu/vectorisable_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace minidl {
namespace {

// The distance in ulps of float `got` from the exact `want`, in units of the float spacing at
// want (the smallest subnormal's below the normal range).
double ulps(float got, double want) {
  const double spacing =
      std::max(std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23), std::ldexp(1.0, -149));
  return std::abs(static_cast<double>(got) - want) / spacing;
}

TEST(VectorisableMath, ExpIsWithinTwoUlpsFromUnderflowToOverflow) {
  double worst = 0;
  for (double x = -103.0; x < 88.7; x += 0.0137) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, ulps(cpu::vectorisable_exp(xf), want));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(cpu::vectorisable_exp(0.0f), 1.0f);
  EXPECT_EQ(cpu::vectorisable_exp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(cpu::vectorisable_exp(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(cpu::vectorisable_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(cpu::vectorisable_exp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(cpu::vectorisable_exp(std::nanf(""))));
  // A subnormal result: e^-100 = 3.72e-44, 26.5 times the smallest subnormal.
  EXPECT_NEAR(cpu::vectorisable_exp(-100.0f), std::exp(-100.0), std::ldexp(1.0, -149));
}

TEST(VectorisableMath, ErfIsWithinFiveTenMillionthsAndOdd) {
  double worst = 0;
  for (double x = -6.0; x < 6.0; x += 0.00113) {
    const float xf = static_cast<float>(x);
    worst =
        std::max(worst, std::abs(cpu::vectorisable_erf(xf) - std::erf(static_cast<double>(xf))));
    EXPECT_EQ(cpu::vectorisable_erf(-xf), -cpu::vectorisable_erf(xf));
  }
  EXPECT_LE(worst, 5e-7);
  EXPECT_EQ(cpu::vectorisable_erf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(cpu::vectorisable_erf(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(cpu::vectorisable_erf(std::nanf(""))));
}

// grad * d/dx silu(x) and grad * d/dx gelu(x), in double.
double silu_derivative(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}
double gelu_derivative(double x) {
  return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * 3.14159265358979323846);
}

// Their float results carry erf's 5e-7 and exp's 2 ulps, times factors below 2 in magnitude (the
// derivatives lie in [-0.17, 1.13] and [-0.1, 1.1]), and float rounding of a few operations.
TEST(VectorisableMath, SiluAndGeluDerivativesAreWithinTwoMillionthsOfTheirFormulas) {
  double worst_silu = 0, worst_gelu = 0;
  for (double x = -30.0; x < 30.0; x += 0.00731) {
    const float xf = static_cast<float>(x);
    const double xd = static_cast<double>(xf);
    for (float grad : {1.0f, -0.75f}) {
      worst_silu = std::max(worst_silu, std::abs(cpu::VectorisableSiluBackward{}(grad, xf) -
                                                 grad * silu_derivative(xd)));
      worst_gelu = std::max(worst_gelu, std::abs(cpu::VectorisableGeluBackward{}(grad, xf) -
                                                 grad * gelu_derivative(xd)));
    }
  }
  EXPECT_LE(worst_silu, 2e-6);
  EXPECT_LE(worst_gelu, 2e-6);
  EXPECT_EQ(cpu::VectorisableGeluBackward{}(2.0f, 0.0f), 1.0f);  // Phi(0) = 1/2
  EXPECT_EQ(cpu::VectorisableSiluBackward{}(2.0f, 0.0f), 1.0f);  // s(0) = 1/2
  EXPECT_TRUE(std::isnan(cpu::VectorisableGeluBackward{}(1.0f, std::nanf(""))));
  EXPECT_TRUE(std::isnan(cpu::VectorisableSiluBackward{}(1.0f, std::nanf(""))));
}

}  // namespace
}  // namespace minidl
