// linspace, logspace and eye on CUDA hold the CPU's values (computed on the host and copied).
#include <gtest/gtest.h>

#include "minidl/core/factories.h"
#include "test_util.h"

namespace minidl {
namespace {

const Device kGpu(kCUDA, 0);

TEST(FactoriesCuda, SameValuesAsTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kBFloat16, kInt64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor on_gpu = linspace(-3.3, 7.1, 50, TensorOptions(dtype).device(kGpu));
    EXPECT_TRUE(on_gpu.device().is_cuda());
    EXPECT_TRUE(testing::bitwise_equal(on_gpu, linspace(-3.3, 7.1, 50, dtype)));
  }
  EXPECT_TRUE(
      testing::bitwise_equal(logspace(0.5, -4.5, 37, 2.0, kGpu), logspace(0.5, -4.5, 37, 2.0)));
  EXPECT_TRUE(testing::bitwise_equal(eye(3, 5, kGpu), eye(3, 5)));
}

}  // namespace
}  // namespace minidl
