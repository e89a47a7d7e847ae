// Group normalisation on CUDA (ops/cuda/group_norm.cu) against the CPU: output and the
// gradients of input, weight and bias, float32 and 16-bit input with float32 parameters, NCHW,
// channels-last and other ranks, rows for a warp and for a block; repeatability, and the device
// errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/ops/group_norm.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;

Tensor wiggly(const Shape& sizes, double phase = 0.0, double offset = 0.0) {
  return testing::wiggly(sizes, kFloat32, {.phase = phase, .amplitude = 2.0, .offset = offset});
}

struct GroupNormCase {
  Shape sizes;
  int64_t groups;
  bool channels_last;
  const char* what;
};

std::vector<GroupNormCase> group_norm_cases() {
  return {
      {{4, 6, 5, 5}, 3, false, "NCHW, 3 groups"},
      {{4, 6, 5, 5}, 3, true, "channels-last, 3 groups"},
      {{2, 32, 16, 16}, 8, false, "groups of 1024 values (a warp per row)"},
      {{2, 64, 40, 40}, 4, false, "groups of 25600 values (a block per row)"},
      {{3, 8}, 2, false, "[N, C]"},
      {{2, 4, 3, 2, 5}, 1, false, "rank 5, one group"},
  };
}

struct Outputs {
  Tensor y, grad_input, grad_weight, grad_bias;
};

Outputs run(const GroupNormCase& c, Device device, DType dtype) {
  Tensor x = wiggly(c.sizes, 0.0, 3.0).to(dtype).to(device);
  if (c.channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
  x.requires_grad_();
  const int64_t channels = c.sizes[1];
  const Tensor weight = wiggly({channels}, 1.0, 1.0).to(device).requires_grad_();
  const Tensor bias = wiggly({channels}, 2.0).to(device).requires_grad_();
  const Tensor y = group_norm(x, c.groups, weight, bias, 1e-5);
  y.backward(wiggly(c.sizes, 5.0).to(dtype).to(device));
  return {y.cpu(), x.grad().cpu(), weight.grad().cpu(), bias.grad().cpu()};
}

TEST(GroupNormCuda, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (const GroupNormCase& c : group_norm_cases()) {
    const Outputs cpu = run(c, Device(kCPU), kFloat32), gpu = run(c, Device(kCUDA), kFloat32);
    EXPECT_TRUE(all_close(gpu.y, cpu.y, 1e-4, 1e-4)) << c.what;
    EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 1e-4, 1e-3)) << c.what;
    // Sums over up to 3200 values per channel, in another order than the CPU's.
    EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 5e-3, 1e-4)) << c.what;
    EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 5e-3, 1e-4)) << c.what;
  }
}

TEST(GroupNormCuda, SixteenBitInputWithFloat32ParametersMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat16, kBFloat16}) {
    for (const GroupNormCase& c : group_norm_cases()) {
      const std::string what = std::string(c.what) + ", " + std::string(dtype_name(dtype));
      const Outputs cpu = run(c, Device(kCPU), dtype), gpu = run(c, Device(kCUDA), dtype);
      EXPECT_EQ(gpu.y.dtype(), dtype) << what;
      EXPECT_EQ(gpu.grad_weight.dtype(), kFloat32) << what;
      EXPECT_TRUE(all_close(gpu.y, cpu.y, 2e-2, 1e-2)) << what;
      EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 2e-2, 1e-2)) << what;
      EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 5e-3, 1e-4)) << what;
      EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 5e-3, 1e-4)) << what;
    }
  }
}

TEST(GroupNormCuda, SameBitsOnEveryRun) {
  SKIP_WITHOUT_CUDA();
  const GroupNormCase c{{8, 32, 12, 12}, 8, false, "parameter gradients over 8 samples"};
  const Outputs first = run(c, Device(kCUDA), kFloat32);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Outputs again = run(c, Device(kCUDA), kFloat32);
    EXPECT_TRUE(bitwise_equal(again.y, first.y));
    EXPECT_TRUE(bitwise_equal(again.grad_input, first.grad_input));
    EXPECT_TRUE(bitwise_equal(again.grad_weight, first.grad_weight));
    EXPECT_TRUE(bitwise_equal(again.grad_bias, first.grad_bias));
  }
}

TEST(GroupNormCuda, ParametersOnAnotherDeviceAreErrors) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = zeros({2, 4, 3}).cuda();
  EXPECT_ERROR_CONTAINS(group_norm(x, 2, zeros({4})),
                        "group_norm: expected weight on cuda:0 like the input, got weight on cpu");
  EXPECT_ERROR_CONTAINS(group_norm(x, 2, Tensor(), zeros({4})),
                        "group_norm: expected bias on cuda:0 like the input, got bias on cpu");
}

}  // namespace
}  // namespace minidl
