// Dropout on CUDA against the CPU: for the same seed the mask is identical (each element's
// keep/drop decision comes from its own Philox counter, whatever the device), the values match,
// and backward reproduces the mask.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/generator.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

TEST(DropoutCuda, SameSeedGivesTheCpusMaskAndValues) {
  SKIP_WITHOUT_CUDA();
  // Sizes from a few elements to more than one grid-stride pass (65536 blocks of 256 threads).
  for (int64_t n : {int64_t{7}, int64_t{4096}, int64_t{20000000}}) {
    for (double p : {0.1, 0.5, 0.8}) {
      const Tensor x = wiggly({n});
      manual_seed(77);
      const Tensor cpu = dropout(x, p, true);
      const GeneratorState after_cpu = default_generator().state();
      manual_seed(77);
      const Tensor gpu = dropout(x.cuda(), p, true);
      EXPECT_EQ(default_generator().state(), after_cpu) << "n " << n << ", p " << p;
      EXPECT_TRUE(all_close(gpu.cpu(), cpu, 0, 0)) << "n " << n << ", p " << p;
    }
  }
}

TEST(DropoutCuda, SixteenBitMasksAndValuesMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor x = wiggly({3, 1000}).to(dtype);
    manual_seed(5);
    const Tensor cpu = dropout(x, 0.3, true);
    manual_seed(5);
    const Tensor gpu = dropout(x.cuda(), 0.3, true);
    EXPECT_EQ(gpu.dtype(), dtype);
    EXPECT_TRUE(all_close(gpu.cpu(), cpu, 0, 0)) << dtype;
  }
}

TEST(DropoutCuda, BackwardReproducesTheForwardMask) {
  SKIP_WITHOUT_CUDA();
  const Tensor upstream = wiggly({64, 33});
  Tensor cpu_x = ones({64, 33}).requires_grad_();
  Tensor gpu_x = ones({64, 33}).cuda().detach().requires_grad_();
  manual_seed(123);
  Tensor cpu_y = dropout(cpu_x, 0.35, true);
  manual_seed(123);
  Tensor gpu_y = dropout(gpu_x, 0.35, true);
  manual_seed(999);  // backward draws nothing
  cpu_y.backward(upstream);
  gpu_y.backward(upstream.cuda());
  EXPECT_TRUE(all_close(gpu_x.grad().cpu(), cpu_x.grad(), 0, 0));
  // The gradient is zero exactly where the forward dropped.
  const std::vector<float> y = to_vector<float>(gpu_y.cpu());
  const std::vector<float> grad = to_vector<float>(gpu_x.grad().cpu());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i] == 0.0f, grad[i] == 0.0f) << i;
}

TEST(DropoutCuda, ChannelsLastInputIsMaskedInLogicalOrder) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = wiggly({2, 3, 4, 5});
  manual_seed(4);
  const Tensor cpu = dropout(x, 0.5, true);
  manual_seed(4);
  const Tensor gpu = dropout(x.cuda().contiguous(MemoryFormat::ChannelsLast), 0.5, true);
  EXPECT_TRUE(all_close(gpu.cpu(), cpu, 0, 0));
}

}  // namespace
}  // namespace minidl
