// Autocast on CUDA against the CPU (whose policy autocast_test.cpp pins down): the same dtypes
// op by op, outputs and float32 gradients close to the CPU's, channels-last convolutions, and
// batch norm in the autocast dtype with float32 parameters and statistics.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

struct Network {
  Tensor conv_weight, conv_bias, fc_weight, fc_bias;

  explicit Network(Device device) {
    conv_weight = wiggly({4, 3, 3, 3}, 0.1).mul(0.3).to(device).requires_grad_();
    conv_bias = wiggly({4}, 0.2).mul(0.3).to(device).requires_grad_();
    fc_weight = wiggly({5, 4 * 6 * 6}, 0.3).mul(0.1).to(device).requires_grad_();
    fc_bias = wiggly({5}, 0.4).mul(0.1).to(device).requires_grad_();
  }
  std::vector<Tensor> params() const { return {conv_weight, conv_bias, fc_weight, fc_bias}; }

  // Forward under `dtype` autocast; checks the policy's dtypes on the way.
  Tensor loss(const Tensor& image, const Tensor& target, DType dtype) const {
    amp::AutocastGuard autocast(dtype);
    const Tensor conv = conv2d(image, conv_weight, conv_bias, 1, 1);
    EXPECT_EQ(conv.dtype(), dtype);
    if (conv.is_cuda())  // channels-last under autocast on CUDA
      EXPECT_TRUE(conv.is_contiguous(MemoryFormat::ChannelsLast));
    const Tensor logits = linear(relu(conv).flatten(1), fc_weight, fc_bias);
    EXPECT_EQ(logits.dtype(), dtype);
    EXPECT_EQ(softmax(logits, 1).dtype(), kFloat32);
    EXPECT_EQ(sum(logits).dtype(), kFloat32);
    const Tensor loss = cross_entropy(logits, target);
    EXPECT_EQ(loss.dtype(), kFloat32);
    return loss;
  }
};

class AutocastCuda : public ::testing::TestWithParam<DType> {};

TEST_P(AutocastCuda, MatchesTheCpuPolicyAndGradients) {
  SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const Tensor image = wiggly({2, 3, 6, 6}, 0.5);
  const Tensor target = tensor(std::vector<int64_t>{1, 4});
  const Network cpu{Device(kCPU)}, gpu{Device(kCUDA)};
  const Tensor cpu_loss = cpu.loss(image, target, dtype);
  const Tensor gpu_loss = gpu.loss(image.cuda(), target.cuda(), dtype);
  // The CPU converts to float32 for its products; cuBLAS and cuDNN accumulate in float32 but
  // round their 16-bit outputs, and may sum in another order.
  const double tolerance = dtype == kBFloat16 ? 3e-2 : 5e-3;
  EXPECT_TRUE(all_close(gpu_loss.cpu(), cpu_loss, tolerance, tolerance));
  cpu_loss.backward();
  gpu_loss.backward();
  const std::vector<Tensor> cpu_params = cpu.params(), gpu_params = gpu.params();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    ASSERT_TRUE(gpu_params[i].grad().defined()) << "parameter " << i;
    EXPECT_EQ(gpu_params[i].grad().dtype(), kFloat32) << "parameter " << i;
    const double largest = cpu_params[i].grad().abs().max().item<float>();
    EXPECT_TRUE(
        all_close(gpu_params[i].grad().cpu(), cpu_params[i].grad(), tolerance * largest, tolerance))
        << "parameter " << i;
  }
}

TEST_P(AutocastCuda, MatmulRunsInTheAutocastDtype) {
  SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const Tensor a = wiggly({3, 4}, 0.1), b = wiggly({4, 2}, 0.2);
  Tensor expected;
  {
    amp::AutocastGuard autocast(dtype);
    expected = matmul(a, b);
  }
  amp::AutocastGuard autocast(dtype);
  const Tensor out = matmul(a.cuda(), b.cuda());
  EXPECT_EQ(out.dtype(), dtype);
  EXPECT_TRUE(all_close(out.cpu(), expected, 1e-2, 1e-2));
}

// conv2d -> batch_norm -> relu under `dtype` autocast on `device`, from a float32 NCHW image
// that requires grad (so the one-pass cast to 16-bit channels-last is differentiated too).
struct ConvBatchNorm {
  Tensor image, conv_weight, bn_weight, bn_bias, running_mean, running_var, out;

  ConvBatchNorm(Device device, DType dtype) {
    image = wiggly({4, 3, 6, 6}, 0.5).to(device).requires_grad_();
    conv_weight = wiggly({8, 3, 3, 3}, 0.1).mul(0.3).to(device).requires_grad_();
    bn_weight = wiggly({8}, 0.2).mul(0.3).add(1.0).to(device).requires_grad_();
    bn_bias = wiggly({8}, 0.3).mul(0.3).to(device).requires_grad_();
    running_mean = zeros({8}).to(device);
    running_var = ones({8}).to(device);
    amp::AutocastGuard autocast(dtype);
    const Tensor conv = conv2d(image, conv_weight, Tensor(), 1, 1);
    const Tensor normalized =
        batch_norm(conv, running_mean, running_var, bn_weight, bn_bias, /*training=*/true);
    out = relu(normalized);
  }
};

TEST_P(AutocastCuda, BatchNormRunsInTheAutocastDtypeAndChannelsLastLikeTheCpu) {
  SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  ConvBatchNorm cpu(Device(kCPU), dtype), gpu(Device(kCUDA), dtype);
  // No float32 round trip between the convolution and the next one: batch_norm and relu keep
  // the 16-bit channels-last activation.
  EXPECT_EQ(gpu.out.dtype(), dtype);
  EXPECT_TRUE(gpu.out.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(gpu.running_mean.dtype(), kFloat32);
  const double tolerance = dtype == kBFloat16 ? 3e-2 : 5e-3;
  EXPECT_TRUE(all_close(gpu.out.cpu(), cpu.out, tolerance, tolerance));
  EXPECT_TRUE(all_close(gpu.running_mean.cpu(), cpu.running_mean, tolerance, tolerance));
  EXPECT_TRUE(all_close(gpu.running_var.cpu(), cpu.running_var, tolerance, tolerance));
  const Tensor grad_output = wiggly({4, 8, 6, 6}, 0.9).to(dtype);
  cpu.out.backward(grad_output);
  gpu.out.backward(grad_output.cuda());
  const std::vector<std::pair<const char*, std::pair<Tensor, Tensor>>> grads{
      {"image", {gpu.image.grad(), cpu.image.grad()}},
      {"conv weight", {gpu.conv_weight.grad(), cpu.conv_weight.grad()}},
      {"batch norm weight", {gpu.bn_weight.grad(), cpu.bn_weight.grad()}},
      {"batch norm bias", {gpu.bn_bias.grad(), cpu.bn_bias.grad()}}};
  for (const auto& [name, pair] : grads) {
    const auto& [gpu_grad, cpu_grad] = pair;
    ASSERT_TRUE(gpu_grad.defined()) << name;
    EXPECT_EQ(gpu_grad.dtype(), kFloat32) << name;
    const double largest = cpu_grad.abs().max().item<float>();
    EXPECT_TRUE(all_close(gpu_grad.cpu(), cpu_grad, tolerance * largest, tolerance)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AutocastCuda, ::testing::Values(kFloat16, kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace minidl
