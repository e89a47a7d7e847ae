// batch_norm_relu (ops/norm.h) on CUDA against the CPU: output, gradients and running statistics,
// NCHW and channels-last, with and without a residual; and on the device the fused op has the
// bits of the three ops apart, as on the CPU (tests/ops/batch_norm_relu_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/ops/elementwise.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;

// out, grad input, grad weight, grad bias, grad residual, running mean, running var.
std::vector<Tensor> fused_pass(Device device, MemoryFormat format, bool residual_on,
                               bool fused = true) {
  manual_seed(5);
  const Tensor x = randn({4, 3, 6, 5}).contiguous(format).to(device).requires_grad_();
  const Tensor residual =
      residual_on ? randn({4, 3, 6, 5}).contiguous(format).to(device).requires_grad_() : Tensor();
  const Tensor weight = (rand({3}) + 0.5).to(device).requires_grad_();
  const Tensor bias = randn({3}).to(device).requires_grad_();
  Tensor running_mean = zeros({3}).to(device), running_var = ones({3}).to(device);
  const Tensor w = randn({4, 3, 6, 5}).to(device);
  Tensor out;
  if (fused) {
    out = batch_norm_relu(x, running_mean, running_var, weight, bias, true, 0.1, 1e-5, residual);
  } else {
    out = batch_norm(x, running_mean, running_var, weight, bias, true, 0.1, 1e-5);
    out = relu(residual_on ? out + residual : out);
  }
  (out * w).sum().backward();
  return {out.cpu(),
          x.grad().cpu(),
          weight.grad().cpu(),
          bias.grad().cpu(),
          residual_on ? residual.grad().cpu() : Tensor(),
          running_mean.cpu(),
          running_var.cpu()};
}

TEST(BatchNormReluCuda, MatchesTheCpuAndTheOpsApartOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
    for (bool residual : {false, true}) {
      const std::string what =
          std::string(format == MemoryFormat::ChannelsLast ? "channels-last" : "NCHW") +
          (residual ? ", residual" : "");
      const auto gpu = fused_pass(Device(kCUDA), format, residual);
      const auto cpu = fused_pass(Device(kCPU), format, residual);
      const auto apart = fused_pass(Device(kCUDA), format, residual, /*fused=*/false);
      for (size_t i = 0; i < gpu.size(); ++i) {
        if (!gpu[i].defined()) continue;
        EXPECT_TRUE(all_close(gpu[i], cpu[i], 1e-3, 1e-4)) << what << ", result " << i;
        EXPECT_TRUE(bitwise_equal(gpu[i], apart[i])) << what << ", result " << i;
      }
    }
}

}  // namespace
}  // namespace minidl
