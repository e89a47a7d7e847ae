// Layer normalisation on CUDA against the CPU: output and the gradients of input, weight and
// bias, float32 and 16-bit input (with float32 parameters), with and without weight and bias.
// The shapes reach both row geometries (a warp per row up to 1024 values, a block per row
// beyond), rows that do not fill a block, columns that do not fill a tile, and the parameter
// gradients cut into several row ranges; then repeatability, a non-contiguous input and the
// device errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/ops/layer_norm.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;

// Sign-mixed float32 values in [offset - 2, offset + 2], on the CPU.
Tensor wiggly(const Shape& sizes, double phase = 0.0, double offset = 0.0) {
  return testing::wiggly(sizes, kFloat32, {.phase = phase, .amplitude = 2.0, .offset = offset});
}

struct LayerNormCase {
  Shape sizes;
  Shape normalized_shape;
  const char* what;
};

std::vector<LayerNormCase> layer_norm_cases() {
  return {
      {{4, 6}, {6}, "short rows (a warp per row, rows below a block)"},
      {{3, 5, 7}, {5, 7}, "normalized_shape of 2 dims"},
      {{37, 1024}, {1024}, "the longest warp rows"},
      {{5, 1025}, {1025}, "the shortest block rows"},
      {{3, 3000}, {3000}, "long rows (a block per row)"},
      {{4096, 33}, {33}, "many rows (parameter gradients in several ranges)"},
      {{2, 1}, {1}, "rows of one value"},
  };
}

struct Outputs {
  Tensor y, grad_input, grad_weight, grad_bias;
};

// One forward and backward on `device`, from the same CPU values.
Outputs run(const LayerNormCase& c, Device device, DType dtype, bool weighted, bool biased) {
  const Tensor x = wiggly(c.sizes, 0.0, 3.0).to(dtype).to(device).requires_grad_();
  Tensor weight, bias;
  if (weighted) weight = wiggly(c.normalized_shape, 1.0, 1.0).to(device).requires_grad_();
  if (biased) bias = wiggly(c.normalized_shape, 2.0).to(device).requires_grad_();
  Tensor y = layer_norm(x, c.normalized_shape, weight, bias, 1e-5);
  y.backward(wiggly(c.sizes, 5.0).to(dtype).to(device));
  return {y.cpu(), x.grad().cpu(), weighted ? weight.grad().cpu() : Tensor(),
          biased ? bias.grad().cpu() : Tensor()};
}

TEST(LayerNormCuda, MatchesCpuWithAndWithoutWeightAndBias) {
  SKIP_WITHOUT_CUDA();
  for (const LayerNormCase& c : layer_norm_cases()) {
    for (int affine = 0; affine < 3; ++affine) {
      const bool weighted = affine >= 1, biased = affine == 2;
      const std::string what =
          std::string(c.what) + (weighted ? ", weight" : "") + (biased ? ", bias" : "");
      const Outputs cpu = run(c, Device(kCPU), kFloat32, weighted, biased);
      const Outputs gpu = run(c, Device(kCUDA), kFloat32, weighted, biased);
      EXPECT_TRUE(all_close(gpu.y, cpu.y, 1e-4, 1e-4)) << what;
      EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 1e-4, 1e-3)) << what;
      // Sums over up to 4096 rows, merged in another order than the CPU's.
      if (weighted) EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 5e-3, 1e-4)) << what;
      if (biased) EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 5e-3, 1e-4)) << what;
    }
  }
}

TEST(LayerNormCuda, SixteenBitInputWithFloat32ParametersMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat16, kBFloat16}) {
    for (const LayerNormCase& c : layer_norm_cases()) {
      const std::string what = std::string(c.what) + ", " + std::string(dtype_name(dtype));
      const Outputs cpu = run(c, Device(kCPU), dtype, true, true);
      const Outputs gpu = run(c, Device(kCUDA), dtype, true, true);
      EXPECT_EQ(gpu.y.dtype(), dtype) << what;
      EXPECT_EQ(gpu.grad_weight.dtype(), kFloat32) << what;
      // One unit in the last place of the 16-bit output apart, at most.
      EXPECT_TRUE(all_close(gpu.y, cpu.y, 2e-2, 1e-2)) << what;
      EXPECT_TRUE(all_close(gpu.grad_input, cpu.grad_input, 2e-2, 1e-2)) << what;
      // float32 sums of the same 16-bit values.
      EXPECT_TRUE(all_close(gpu.grad_weight, cpu.grad_weight, 5e-3, 1e-4)) << what;
      EXPECT_TRUE(all_close(gpu.grad_bias, cpu.grad_bias, 5e-3, 1e-4)) << what;
    }
  }
}

TEST(LayerNormCuda, SameBitsOnEveryRun) {
  SKIP_WITHOUT_CUDA();
  const LayerNormCase c{{4096, 96}, {96}, "many rows"};
  const Outputs first = run(c, Device(kCUDA), kFloat32, true, true);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Outputs again = run(c, Device(kCUDA), kFloat32, true, true);
    EXPECT_TRUE(bitwise_equal(again.y, first.y));
    EXPECT_TRUE(bitwise_equal(again.grad_input, first.grad_input));
    EXPECT_TRUE(bitwise_equal(again.grad_weight, first.grad_weight));
    EXPECT_TRUE(bitwise_equal(again.grad_bias, first.grad_bias));
  }
}

TEST(LayerNormCuda, NonContiguousInputMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = wiggly({6, 4, 40}, 0.0, 1.0).transpose(0, 1);  // [4, 6, 40]
  const Tensor weight = wiggly({6, 40}, 1.0, 1.0), bias = wiggly({6, 40}, 2.0);
  const Tensor expected = layer_norm(x, {6, 40}, weight, bias);
  const Tensor y = layer_norm(testing::same_layout_on_cuda(x), {6, 40}, weight.cuda(), bias.cuda());
  EXPECT_TRUE(all_close(y.cpu(), expected, 1e-4, 1e-4));
}

TEST(LayerNormCuda, ParametersOnAnotherDeviceAreErrors) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = zeros({2, 3, 4}).cuda();
  EXPECT_ERROR_CONTAINS(layer_norm(x, {4}, zeros({4}), zeros({4}).cuda()),
                        "layer_norm: expected weight on cuda:0 like the input, got weight on cpu");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {4}, Tensor(), zeros({4})),
                        "layer_norm: expected bias on cuda:0 like the input, got bias on cpu");
}

}  // namespace
}  // namespace minidl
