// Batch normalisation on CUDA against the CPU (float32): outputs, running statistics and the
// gradients of input, weight and bias, in training and evaluation, with and without affine
// parameters, for [N, C], [N, C, L], NCHW and channels-last (NHWC) inputs. The shapes reach both
// reduction kernels (planes and columns) with and without channels cut into several ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/ops/norm.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Sign-mixed float32 values in [offset - 2, offset + 2], on the CPU.
Tensor wiggly(const Shape& sizes, double phase = 0.0, double offset = 0.0) {
  return testing::wiggly(sizes, kFloat32, {.phase = phase, .amplitude = 2.0, .offset = offset});
}

struct NormCase {
  Shape sizes;
  MemoryFormat format;
  const char* what;
};

std::vector<NormCase> norm_cases() {
  const auto nchw = MemoryFormat::Contiguous;
  const auto nhwc = MemoryFormat::ChannelsLast;
  return {
      {{16, 5}, nchw, "[N, C] (columns)"},
      {{4, 3, 10}, nchw, "[N, C, L] (planes)"},
      {{2, 3, 5, 5}, nchw, "NCHW, small (planes)"},
      {{2, 3, 5, 5}, nhwc, "NHWC, small (columns)"},
      {{32, 16, 32, 32}, nchw, "NCHW, channels cut into ranges (planes)"},
      {{32, 40, 32, 32}, nhwc, "NHWC, channels cut into ranges (columns)"},
      {{4096, 3}, nchw, "[N, C] with a long batch (columns, ranges)"},
  };
}

struct Outputs {
  Tensor y, running_mean, running_var, grad_input, grad_weight, grad_bias;
};

// One forward and backward on `device`, from the same CPU values.
Outputs run(const NormCase& c, Device device, bool training, bool affine) {
  const int64_t channels = c.sizes[1];
  Tensor x = wiggly(c.sizes, 0.0, 3.0).to(device);
  if (x.dim() == 4) x = x.contiguous(c.format);
  x = x.detach().requires_grad_();
  Tensor weight, bias;
  if (affine) {
    weight = wiggly({channels}, 1.0, 1.0).to(device).requires_grad_();
    bias = wiggly({channels}, 2.0).to(device).requires_grad_();
  }
  Tensor running_mean = wiggly({channels}, 3.0).to(device);
  Tensor running_var = (wiggly({channels}, 4.0, 3.0)).to(device);
  Tensor y = batch_norm(x, running_mean, running_var, weight, bias, training, 0.1, 1e-5);
  y.backward(wiggly(c.sizes, 5.0).to(device));
  return {y.cpu(),
          running_mean.cpu(),
          running_var.cpu(),
          x.grad().cpu(),
          affine ? weight.grad().cpu() : Tensor(),
          affine ? bias.grad().cpu() : Tensor()};
}

TEST(BatchNormCuda, MatchesCpuInTrainingAndEvaluationWithAndWithoutAffine) {
  SKIP_WITHOUT_CUDA();
  for (const NormCase& c : norm_cases()) {
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        const std::string what = std::string(c.what) + (training ? ", training" : ", evaluation") +
                                 (affine ? ", affine" : ", no affine");
        const Outputs cpu = run(c, Device(kCPU), training, affine);
        const Outputs gpu = run(c, Device(kCUDA), training, affine);
        EXPECT_TRUE(all_close(gpu.y, cpu.y, 1e-4, 1e-4)) << what;
        EXPECT_TRUE(all_close(gpu.running_mean, cpu.running_mean, 1e-5, 1e-5)) << what;
        EXPECT_TRUE(all_close(gpu.running_var, cpu.running_var, 1e-5, 1e-5)) << what;
        EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 1e-4, 1e-3)) << what;
        if (affine) {
          // Sums over up to 32768 values per channel, merged in another order than the CPU's.
          EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 1e-2, 1e-4)) << what;
          EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 1e-2, 1e-4)) << what;
        }
      }
    }
  }
}

TEST(BatchNormCuda, ChannelsLastStaysChannelsLastThroughForwardAndBackward) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({2, 8, 4, 4}).cuda().contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  const Tensor weight = ones({8}).cuda().requires_grad_();
  Tensor y = batch_norm(x, Tensor(), Tensor(), weight, Tensor(), true);
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast);
  y.backward(wiggly({2, 8, 4, 4}, 1.0).cuda());
  EXPECT_EQ(x.grad().suggest_memory_format(), MemoryFormat::ChannelsLast);
}

// 4 channels of 64 values: NCHW in 16-byte vectors, channels-last one element at a time;
// 24 channels of 16 values: both in vectors (ops/cuda/norm.cu); 64 channels of 4096 values: the
// channels-last reductions in vectors of 8 and cut into ranges
// (ops/cuda/batch_norm_reduction_plan.h). Forward and backward, the gradients against the CPU's
// from the same 16-bit values.
TEST(BatchNormCuda, SixteenBitInputWithFloat32ParametersMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (const Shape& sizes : {Shape{8, 4, 8, 8}, Shape{4, 24, 4, 4}, Shape{16, 64, 16, 16}}) {
    const int64_t channels = sizes[1];
    const Tensor x32 = wiggly(sizes, 0.0, 100.0);
    const Tensor dy32 = wiggly(sizes, 3.0);
    for (DType dtype : {kFloat16, kBFloat16}) {
      for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
        const std::string what = std::string(dtype_name(dtype)) + ", " + std::to_string(channels) +
                                 " channels" +
                                 (format == MemoryFormat::ChannelsLast ? ", channels-last" : "");
        const Tensor x = x32.to(dtype), dy = dy32.to(dtype);
        Tensor cpu_mean = zeros({channels}), cpu_var = ones({channels});
        Tensor gpu_mean = zeros({channels}).cuda(), gpu_var = ones({channels}).cuda();
        const Tensor weight = wiggly({channels}, 1.0, 1.0), bias = wiggly({channels}, 2.0);
        const Tensor cpu_x = x.detach().requires_grad_();
        const Tensor cpu_weight = weight.detach().requires_grad_();
        const Tensor cpu_bias = bias.detach().requires_grad_();
        const Tensor expected = batch_norm(cpu_x, cpu_mean, cpu_var, cpu_weight, cpu_bias, true);
        expected.backward(dy);
        const Tensor gpu_x = x.cuda().contiguous(format).detach().requires_grad_();
        const Tensor gpu_weight = weight.cuda().requires_grad_();
        const Tensor gpu_bias = bias.cuda().requires_grad_();
        const Tensor y = batch_norm(gpu_x, gpu_mean, gpu_var, gpu_weight, gpu_bias, true);
        y.backward(dy.cuda().contiguous(format));
        EXPECT_EQ(y.dtype(), dtype);
        EXPECT_TRUE(all_close(y.cpu(), expected, 2e-2, 1e-2)) << what;
        EXPECT_TRUE(all_close(gpu_mean.cpu(), cpu_mean, 1e-4, 1e-5)) << what;
        EXPECT_TRUE(all_close(gpu_var.cpu(), cpu_var, 1e-4, 1e-4)) << what;
        // Float32 sums of the same 16-bit values in another order; grad_input rounded to 16 bits.
        EXPECT_TRUE(all_close(gpu_bias.grad().cpu(), cpu_bias.grad(), 1e-3, 1e-4)) << what;
        EXPECT_TRUE(all_close(gpu_weight.grad().cpu(), cpu_weight.grad(), 1e-3, 1e-3)) << what;
        EXPECT_TRUE(all_close(gpu_x.grad().cpu(), cpu_x.grad(), 1e-2, 2e-2)) << what;
      }
    }
  }
}

TEST(BatchNormCuda, ParametersOnAnotherDeviceAreErrors) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = zeros({2, 3, 4, 4}).cuda();
  const Tensor on_gpu = zeros({3}).cuda();
  EXPECT_ERROR_CONTAINS(batch_norm(x, on_gpu, on_gpu, zeros({3}), on_gpu, true),
                        "batch_norm: expected weight on cuda:0 like the input, got weight on cpu");
  EXPECT_ERROR_CONTAINS(batch_norm(x, zeros({3}), zeros({3}), Tensor(), Tensor(), false),
                        "batch_norm: expected running_mean on cuda:0 like the input");
}

}  // namespace
}  // namespace minidl
