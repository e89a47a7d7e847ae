// The vectorised float rows of the CPU cross-entropy (ops/cpu/cross_entropy_rows.h) against their
// definitions computed in double, for widths around the 16 lanes (1, 15, 16, 17, 256, 1000),
// with label smoothing, a masked class (-inf logit), and rows of large logits; and the AVX2 and
// AVX-512 versions giving the baseline's bits.
#include "minidl/ops/cpu/cross_entropy_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "minidl/ops/cpu/vector_versions.h"

namespace minidl {
namespace {

using cpu::LoopVersion;

constexpr int64_t kWidths[] = {1, 15, 16, 17, 256, 1000};

// Logits in [offset - 8, offset + 8], one of them -inf (a masked class) where masked and the
// row has more than one.
std::vector<float> logits_of(int64_t classes, float offset, bool masked, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(offset - 8.0f, offset + 8.0f);
  std::vector<float> x(static_cast<size_t>(classes));
  for (float& v : x) v = uniform(generator);
  if (masked && classes > 1)
    x[static_cast<size_t>(classes / 2)] = -std::numeric_limits<float>::infinity();
  return x;
}

double log_sum_exp_in_double(const std::vector<float>& x) {
  double max = -std::numeric_limits<double>::infinity();
  for (float v : x) max = std::max(max, static_cast<double>(v));
  double sum = 0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum);
}

TEST(CrossEntropyRows, LogSumExpIsTheDefinition) {
  for (const int64_t classes : kWidths)
    for (const float offset : {0.0f, 80.0f, -80.0f})
      for (const bool masked : {false, true}) {
        SCOPED_TRACE(std::to_string(classes) + " classes, offset " + std::to_string(offset) +
                     (masked ? ", masked" : ""));
        const std::vector<float> x = logits_of(classes, offset, masked, 1);
        const double expected = log_sum_exp_in_double(x);
        // A few float roundings of the sum and the log: relative to the result's magnitude.
        EXPECT_NEAR(cpu::log_sum_exp_row(x.data(), classes), expected,
                    2e-6 * std::max(1.0, std::abs(expected)));
      }
}

TEST(CrossEntropyRows, GradientIsSoftmaxLessTheSmoothedTarget) {
  for (const int64_t classes : kWidths)
    for (const float smoothing : {0.0f, 0.1f})
      for (const bool masked : {false, true}) {
        SCOPED_TRACE(std::to_string(classes) + " classes, smoothing " + std::to_string(smoothing) +
                     (masked ? ", masked" : ""));
        const std::vector<float> x = logits_of(classes, 3.0f, masked, 2);
        const double lse = log_sum_exp_in_double(x);
        const int64_t target = classes - 1;
        const float row_grad = 0.25f;
        std::vector<float> grad(static_cast<size_t>(classes));
        cpu::cross_entropy_grad_row(x.data(), classes, static_cast<float>(lse), target, smoothing,
                                    row_grad, grad.data());
        for (int64_t c = 0; c < classes; ++c) {
          const double wanted = (c == target ? 1.0 - smoothing : 0.0) + smoothing / classes;
          const double expected = row_grad * (std::exp(x[c] - lse) - wanted);
          EXPECT_NEAR(grad[c], expected, 1e-7) << "class " << c;
        }
        if (masked && classes > 1) {
          const float masked_grad = grad[static_cast<size_t>(classes / 2)];
          EXPECT_EQ(masked_grad, -row_grad * smoothing / static_cast<float>(classes));
        }
      }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(CrossEntropyRows, EveryLoopVersionGivesTheBaselinesBits) {
  const std::vector<LoopVersion> versions = cpu::loop_versions_of_this_cpu();
  if (versions.size() == 1) GTEST_SKIP() << "this CPU has no AVX2: only the baseline loops run";
  for (const int64_t classes : kWidths) {
    SCOPED_TRACE(std::to_string(classes) + " classes");
    const std::vector<float> x = logits_of(classes, 5.0f, true, 3);
    std::vector<std::vector<float>> results;
    for (const LoopVersion loops : versions) {
      const float lse = cpu::log_sum_exp_row(x.data(), classes, loops);
      std::vector<float> grad(static_cast<size_t>(classes));
      cpu::cross_entropy_grad_row(x.data(), classes, lse, 0, 0.1f, 0.5f, grad.data(), loops);
      grad.push_back(lse);
      results.push_back(grad);
    }
    for (size_t v = 1; v < versions.size(); ++v) {
      SCOPED_TRACE("version " + std::to_string(v) + " against the baseline");
      EXPECT_TRUE(same_bits(results[0], results[v]));
    }
  }
}

}  // namespace
}  // namespace minidl
