// CUDA random values equal the CPU's for the same seed (Note [Philox counters in minidl]).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

const Device kGpu(kCUDA, 0);

TEST(RandomCuda, RandMatchesTheCpuBitForBit) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    manual_seed(2024);
    (void)rand({3});  // start the comparison at a non-zero offset
    const std::vector<float> cpu = to_vector<float>(rand({100003}, dtype));
    manual_seed(2024);
    (void)rand({3}, TensorOptions(dtype).device(kGpu));
    const std::vector<float> gpu =
        to_vector<float>(rand({100003}, TensorOptions(dtype).device(kGpu)));
    EXPECT_EQ(gpu, cpu);
  }
}

TEST(RandomCuda, UniformWithBoundsMatchesTheCpuBitForBit) {
  SKIP_WITHOUT_CUDA();
  manual_seed(5);
  Tensor cpu = empty({4096});
  uniform_(cpu, -0.3, 0.7);
  manual_seed(5);
  Tensor gpu = empty({4096}, kGpu);
  uniform_(gpu, -0.3, 0.7);
  EXPECT_EQ(to_vector<float>(gpu), to_vector<float>(cpu));
}

TEST(RandomCuda, RandnMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  manual_seed(77);
  Tensor cpu = randn({65536});
  manual_seed(77);
  Tensor gpu = randn({65536}, kGpu);
  // Box-Muller runs in double on both; CUDA's and libm's log/cos may differ in the last bit of
  // a double, which can move a float result by one ulp at most.
  EXPECT_TRUE(testing::all_close(gpu, cpu, 0.0, 2e-7));
}

TEST(RandomCuda, NonContiguousTargetMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  manual_seed(8);
  Tensor cpu = zeros({5, 7}).t();
  uniform_(cpu, 0, 1);
  manual_seed(8);
  Tensor gpu = zeros({5, 7}, kGpu).t();
  uniform_(gpu, 0, 1);
  EXPECT_EQ(to_vector<float>(gpu), to_vector<float>(cpu));
}

// Multinomial draws are a pure function of (seed, offset, row, sample) (Note [Multinomial
// draws] in ops/random_math.h): the same on the device as on the CPU.
TEST(RandomCuda, MultinomialMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kBFloat16, kFloat16}) {
    for (bool replacement : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (replacement ? " with" : " without") +
                   " replacement");
      // Rows of a small and of a vocabulary-sized distribution, some weights zero.
      for (int64_t categories : {int64_t{7}, int64_t{50257}}) {
        manual_seed(30);
        Tensor weights = rand({4, categories}).add(0.05);
        weights.narrow(1, 1, 1).fill_(0);  // a category that is never drawn
        weights = weights.to(dtype);
        // One draw (the race's winner by a reduction), and several.
        for (int64_t samples : {int64_t{1}, replacement ? int64_t{300} : int64_t{5}}) {
          manual_seed(31);
          (void)rand({3});  // a non-zero offset
          const std::vector<int64_t> cpu =
              to_vector<int64_t>(multinomial(weights, samples, replacement));
          manual_seed(31);
          (void)rand({3});
          const std::vector<int64_t> gpu =
              to_vector<int64_t>(multinomial(weights.cuda(), samples, replacement));
          EXPECT_EQ(gpu, cpu) << categories << " categories, " << samples << " samples";
        }
      }
    }
  }
}

TEST(RandomCuda, MultinomialFrequenciesOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  manual_seed(11);
  const Tensor drawn = multinomial(tensor({1.0, 0.0, 2.0, 3.0, 4.0}).cuda(), 100000, true);
  std::vector<int64_t> counts(5, 0);
  for (int64_t c : to_vector<int64_t>(drawn)) ++counts.at(static_cast<size_t>(c));
  EXPECT_EQ(counts[1], 0);
  for (int64_t c : {0, 2, 3, 4}) {
    const double p = (c == 0 ? 1.0 : static_cast<double>(c)) / 10.0;
    EXPECT_NEAR(static_cast<double>(counts[c]), 100000 * p, 5 * std::sqrt(100000 * p * (1 - p)));
  }
}

TEST(RandomCuda, MultinomialErrorsOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.2, -0.1}).cuda(), 1), "element < 0");
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.0, 0.0}).cuda(), 1), "sum of probabilities <= 0");
  EXPECT_ERROR_CONTAINS(multinomial(tensor({0.2, 0.0, 0.8}).cuda(), 3),
                        "not enough non-negative category");
}

TEST(RandomCuda, RandintAndBernoulliMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  manual_seed(40);
  const std::vector<int64_t> cpu = to_vector<int64_t>(randint(-5, 1000003, {70001}));
  manual_seed(40);
  EXPECT_EQ(to_vector<int64_t>(randint(-5, 1000003, {70001}, TensorOptions(kInt64).device(kGpu))),
            cpu);
  for (DType dtype : {kFloat32, kBFloat16}) {
    const Tensor p = rand({4099}).to(dtype);
    manual_seed(41);
    const Tensor on_cpu = bernoulli(p);
    manual_seed(41);
    EXPECT_TRUE(testing::bitwise_equal(bernoulli(p.cuda()), on_cpu)) << dtype_name(dtype);
  }
  manual_seed(42);
  const Tensor normal_cpu = normal(1.5, 0.5, {1000});
  manual_seed(42);
  EXPECT_TRUE(testing::all_close(normal(1.5, 0.5, {1000}, kGpu), normal_cpu, 0.0, 2e-7));
}

}  // namespace
}  // namespace minidl
