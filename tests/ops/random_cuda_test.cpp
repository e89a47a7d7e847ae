// CUDA random values equal the CPU's for the same seed (Note [Philox counters in minidl]).
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace minidl
