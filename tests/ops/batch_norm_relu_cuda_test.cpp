// batch_norm_relu (ops/norm.h) on CUDA against the CPU: output, gradients and running statistics,
// NCHW and channels-last, with and without a residual; and on the device the fused op has the
// bits of the three ops apart, as on the CPU (tests/ops/batch_norm_relu_test.cpp). The shapes
// reach both of the kernels' element-wise passes: one element at a time (3 channels of 30
// values) and 16-byte vectors (16 channels of 32 values; float32 and bfloat16), and a residual
// whose data a view's offset misaligns sends the vectorised shape back to the first.
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

struct Case {
  Shape sizes;
  DType dtype;
  MemoryFormat format;
  bool residual;
  bool misaligned_residual = false;  // residual one element into its storage
};

std::string describe(const Case& c) {
  return std::string(c.format == MemoryFormat::ChannelsLast ? "channels-last" : "NCHW") + ", " +
         std::string(dtype_name(c.dtype)) + ", " + std::to_string(c.sizes[1]) + " channels" +
         (c.residual ? ", residual" : "") + (c.misaligned_residual ? " (misaligned)" : "");
}

// The residual's values in `format` on `device`; misaligned: a view one element into a longer
// storage, dense in that format.
Tensor make_residual(const Case& c, Device device) {
  const Tensor values = randn(c.sizes).to(c.dtype).contiguous(c.format).to(device);
  if (!c.misaligned_residual) return values.detach().requires_grad_();
  const Tensor storage = zeros({values.numel() + 1}, TensorOptions(c.dtype).device(device));
  const Tensor flat =
      values
          .permute(c.format == MemoryFormat::ChannelsLast ? std::vector<int64_t>{0, 2, 3, 1}
                                                          : std::vector<int64_t>{0, 1, 2, 3})
          .contiguous()
          .reshape({values.numel()});
  storage.narrow(0, 1, values.numel()).copy_(flat);
  const Shape& s = c.sizes;
  const Tensor view = c.format == MemoryFormat::ChannelsLast
                          ? storage.narrow(0, 1, values.numel())
                                .view({s[0], s[2], s[3], s[1]})
                                .permute({0, 3, 1, 2})
                          : storage.narrow(0, 1, values.numel()).view(s);
  EXPECT_TRUE(bitwise_equal(view, values)) << describe(c);
  return view.detach().requires_grad_();
}

// out, grad input, grad weight, grad bias, grad residual, running mean, running var.
std::vector<Tensor> fused_pass(const Case& c, Device device, bool fused = true) {
  manual_seed(5);
  const int64_t channels = c.sizes[1];
  const Tensor x = randn(c.sizes).to(c.dtype).contiguous(c.format).to(device).requires_grad_();
  const Tensor residual = c.residual ? make_residual(c, device) : Tensor();
  const Tensor weight = (rand({channels}) + 0.5).to(device).requires_grad_();
  const Tensor bias = randn({channels}).to(device).requires_grad_();
  Tensor running_mean = zeros({channels}).to(device), running_var = ones({channels}).to(device);
  const Tensor w = randn(c.sizes).to(device);
  Tensor out;
  if (fused) {
    out = batch_norm_relu(x, running_mean, running_var, weight, bias, true, 0.1, 1e-5, residual);
  } else {
    out = batch_norm(x, running_mean, running_var, weight, bias, true, 0.1, 1e-5);
    out = relu(c.residual ? out + residual : out);
  }
  (out.to(kFloat32) * w).sum().backward();
  return {out.cpu(),
          x.grad().cpu(),
          weight.grad().cpu(),
          bias.grad().cpu(),
          c.residual ? residual.grad().cpu() : Tensor(),
          running_mean.cpu(),
          running_var.cpu()};
}

std::vector<Case> cases() {
  std::vector<Case> result;
  for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
    for (bool residual : {false, true}) {
      result.push_back({{4, 3, 6, 5}, kFloat32, format, residual});
      result.push_back({{4, 16, 4, 8}, kFloat32, format, residual});
      result.push_back({{4, 16, 4, 8}, kBFloat16, format, residual});
    }
  result.push_back({{4, 16, 4, 8}, kFloat32, MemoryFormat::Contiguous, true, true});
  result.push_back({{4, 16, 4, 8}, kFloat32, MemoryFormat::ChannelsLast, true, true});
  result.push_back({{4, 16, 4, 8}, kBFloat16, MemoryFormat::ChannelsLast, true, true});
  return result;
}

TEST(BatchNormReluCuda, MatchesTheCpuAndTheOpsApartOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  for (const Case& c : cases()) {
    const auto gpu = fused_pass(c, Device(kCUDA));
    const auto apart = fused_pass(c, Device(kCUDA), /*fused=*/false);
    const auto cpu = fused_pass(c, Device(kCPU));
    for (size_t i = 0; i < gpu.size(); ++i) {
      if (!gpu[i].defined()) continue;
      EXPECT_TRUE(bitwise_equal(gpu[i], apart[i])) << describe(c) << ", result " << i;
      // bfloat16 rounds the two devices' slightly different statistics apart by an ulp, and an
      // output rounded to zero on one of them stops the gradient there: bits on the device only.
      if (c.dtype == kFloat32)
        EXPECT_TRUE(all_close(gpu[i], cpu[i], 1e-3, 1e-4)) << describe(c) << ", result " << i;
    }
  }
}

}  // namespace
}  // namespace minidl
