// Batch normalisation on the CPU: a tiny batch worked out by hand (statistics, affine transform,
// running-statistics update with momentum and the unbiased variance), evaluation mode, ranks and
// layouts, mixed precision, errors, and f64 gradient checks in training and evaluation, with
// and without the affine parameters.
#include "minidl/ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/dispatch.h"
#include "minidl/ops/cuda_batch_norm_implementations.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/norm_kernels.h"
#include "minidl/ops/norm_math.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Sign-mixed values that are not all alike per channel, row-major over `sizes`.
Tensor wiggly(const Shape& sizes, DType dtype = kFloat64, double phase = 0.0) {
  return testing::wiggly(sizes, dtype,
                         {.phase = phase, .amplitude = 2.0, .offset = 0.5, .step = 0.9});
}

// ---- hand-worked values ----

// Input [N = 2, C = 2, H = 1, W = 2], row-major:
//   channel 0: n = 0 -> {1, 2}, n = 1 -> {3, 6}: mean 3, squared deviations 4 + 1 + 0 + 9 = 14
//   channel 1: n = 0 -> {0, 0}, n = 1 -> {4, 4}: mean 2, squared deviations 4 * 4 = 16
// so the biased variances are 3.5 and 4, the unbiased ones 14 / 3 and 16 / 3.
Tensor tiny_batch() { return tensor(std::vector<double>{1, 2, 0, 0, 3, 6, 4, 4}, {2, 2, 1, 2}); }

// The CUDA kernels' vectorised passes (ops/cuda/norm.cu) find each lane's channel from its
// vector's first element: wherever ChannelLayout::vectors_fit says so, that is channel_of of
// every element, and it refuses the layouts where a vector would straddle channels.
TEST(BatchNormLayout, VectorLanesFindTheirChannelsWhereVectorsFit) {
  struct LayoutCase {
    norm::ChannelLayout layout;
    const char* what;
  };
  const std::vector<LayoutCase> cases = {
      {{2, 3, 16, 48, 16, 1}, "NCHW, spatial 16"},  {{2, 3, 12, 36, 12, 1}, "NCHW, spatial 12"},
      {{2, 16, 3, 48, 1, 16}, "NHWC, 16 channels"}, {{2, 12, 3, 36, 1, 12}, "NHWC, 12 channels"},
      {{5, 8, 1, 8, 1, 8}, "[N, C], 8 channels"},   {{4, 6, 1, 6, 1, 6}, "[N, C], 6 channels"},
      {{2, 3, 1, 3, 1, 3}, "NCHW with 1x1 planes"},
  };
  for (const auto& [layout, what] : cases) {
    for (const int width : {1, 2, 4, 8}) {
      bool every_lane_right = true;
      for (int64_t first = 0; first < layout.numel(); first += width)
        for (int lane = 0; lane < width && first + lane < layout.numel(); ++lane)
          every_lane_right =
              every_lane_right && layout.lane_channel(layout.channel_of(first), lane) ==
                                      layout.channel_of(first + lane);
      if (layout.vectors_fit(width)) {
        EXPECT_TRUE(every_lane_right) << what << ", width " << width;
        EXPECT_EQ(layout.numel() % width, 0) << what << ", width " << width;
      } else {
        EXPECT_FALSE(every_lane_right) << what << ", width " << width << " (a vector would "
                                       << "straddle channels, so vectors_fit must refuse it)";
      }
    }
  }
}

// The kernels' relu mask (ops/norm_kernels.h): CUDA's op reads batch_norm_relu's output inside
// both backward passes; the CPU's op masks first (ops/norm.cpp says why), but its kernels keep
// the contract. Reading the mask with the gradient gives the bits of masking the gradient first.
TEST(BatchNormKernels, ReadingReluMaskGivesTheBitsOfMaskingFirst) {
  const NormKernels& kernels = kernels_for<NormKernels>(Device(kCPU));
  for (DType dtype : {kFloat32, kBFloat16}) {
    for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      const std::string what = std::string(dtype_name(dtype)) +
                               (format == MemoryFormat::ChannelsLast ? ", NHWC" : ", NCHW");
      const Shape sizes{4, 3, 5, 6};
      const Tensor x = wiggly(sizes, dtype).contiguous(format);
      const Tensor dy = wiggly(sizes, dtype, 0.4).contiguous(format);
      const Tensor relu_output = relu(wiggly(sizes, dtype, 0.8)).contiguous(format);
      const Tensor masked = where(gt(relu_output, 0.0), dy, zeros_like(dy)).contiguous(format);
      const norm::ChannelLayout layout = format == MemoryFormat::ChannelsLast
                                             ? norm::ChannelLayout{4, 3, 30, 90, 1, 3}
                                             : norm::ChannelLayout{4, 3, 30, 90, 30, 1};
      const Tensor mean = wiggly({3}, kFloat32, 0.1), invstd = wiggly({3}, kFloat32, 0.2) + 3.0;
      const Tensor weight = wiggly({3}, kFloat32, 0.3) + 3.0;
      std::vector<Tensor> sums;  // sum_dy, sum_dy_xmu: read with the mask, then of `masked`
      for (const auto& [grad, mask] : {std::pair{dy, relu_output}, std::pair{masked, Tensor()}}) {
        const Tensor sum_dy = zeros({3}), sum_dy_xmu = zeros({3});
        kernels.batch_norm_backward_reduce(sum_dy, sum_dy_xmu, grad, x, mean, layout, mask);
        sums.insert(sums.end(), {sum_dy, sum_dy_xmu});
      }
      EXPECT_TRUE(testing::bitwise_equal(sums[0], sums[2])) << what;
      EXPECT_TRUE(testing::bitwise_equal(sums[1], sums[3])) << what;
      std::vector<Tensor> grad_inputs;
      for (const auto& [grad, mask] : {std::pair{dy, relu_output}, std::pair{masked, Tensor()}}) {
        const Tensor grad_input = empty(sizes, TensorOptions(dtype), format);
        kernels.batch_norm_backward_input(grad_input, grad, x, mean, invstd, weight, sums[2],
                                          sums[3], layout, norm::Statistics::Batch, mask);
        grad_inputs.push_back(grad_input);
      }
      EXPECT_TRUE(testing::bitwise_equal(grad_inputs[0], grad_inputs[1])) << what;
      EXPECT_FALSE(testing::bitwise_equal(grad_inputs[1], empty_like(grad_inputs[1]).zero_()))
          << what << ": the gradient is not all zero";
    }
  }
}

// MINIDL_CUDA_BATCH_NORM's values (ops/cuda_batch_norm_implementations.h), in any build.
TEST(CudaBatchNormSelection, NamesTheTwoImplementationsAndRefusesOthers) {
  EXPECT_EQ(parse_cuda_batch_norm(""), CudaBatchNorm::Minidl);
  EXPECT_EQ(parse_cuda_batch_norm("minidl"), CudaBatchNorm::Minidl);
  EXPECT_EQ(parse_cuda_batch_norm("cudnn"), CudaBatchNorm::Cudnn);
  EXPECT_ERROR_CONTAINS(parse_cuda_batch_norm("cuDNN"),
                        "MINIDL_CUDA_BATCH_NORM: expected \"minidl\" or \"cudnn\" (or unset), "
                        "got \"cuDNN\"");
}

// cuDNN serves CUDA inputs only: choosing it leaves the CPU's batch norm, and its bits, alone.
TEST(CudaBatchNormSelection, ChoosingCudnnLeavesTheCpusBitsAlone) {
  const CudaBatchNorm previous = cuda_batch_norm();
  const auto pass = [] {
    Tensor x = wiggly({4, 8, 3, 3}, kFloat32).contiguous(MemoryFormat::ChannelsLast);
    x.requires_grad_();
    Tensor running_mean = zeros({8}), running_var = ones({8});
    const Tensor weight = ones({8}).requires_grad_(), bias = zeros({8}).requires_grad_();
    Tensor y = batch_norm_relu(x, running_mean, running_var, weight, bias, true, 0.1, 1e-5);
    y.backward(wiggly({4, 8, 3, 3}, kFloat32, 0.3));
    return std::vector<Tensor>{y, x.grad(), weight.grad(), bias.grad(), running_var};
  };
  set_cuda_batch_norm(CudaBatchNorm::Minidl);
  const std::vector<Tensor> minidl_kernels = pass();
  set_cuda_batch_norm(CudaBatchNorm::Cudnn);
  const std::vector<Tensor> cudnn_chosen = pass();
  set_cuda_batch_norm(previous);
  for (size_t i = 0; i < minidl_kernels.size(); ++i)
    EXPECT_TRUE(testing::bitwise_equal(cudnn_chosen[i], minidl_kernels[i])) << "result " << i;
}

TEST(BatchNorm, TrainingNormalisesWithBatchStatisticsAndUpdatesRunningOnes) {
  Tensor running_mean = tensor(std::vector<double>{0, 1});
  Tensor running_var = tensor(std::vector<double>{1, 2});
  const Tensor weight = tensor(std::vector<double>{2, 0.5});
  const Tensor bias = tensor(std::vector<double>{1, -1});
  const Tensor y = batch_norm(tiny_batch(), running_mean, running_var, weight, bias,
                              /*training=*/true, /*momentum=*/0.1, /*eps=*/0.0);
  // Channel 0: (x - 3) / sqrt(3.5) * 2 + 1. Channel 1: (x - 2) / 2 * 0.5 - 1.
  const double s = std::sqrt(3.5);
  const std::vector<double> expected{(1 - 3) / s * 2 + 1, (2 - 3) / s * 2 + 1, -1.5, -1.5,
                                     (3 - 3) / s * 2 + 1, (6 - 3) / s * 2 + 1, -0.5, -0.5};
  EXPECT_TRUE(all_close(y, tensor(expected, {2, 2, 1, 2}), 1e-14, 1e-14));
  // running_mean: 0.9 * [0, 1] + 0.1 * [3, 2]; running_var: 0.9 * [1, 2] + 0.1 * [14/3, 16/3].
  EXPECT_TRUE(all_close(running_mean, tensor(std::vector<double>{0.3, 1.1}), 1e-15, 1e-15));
  EXPECT_TRUE(all_close(running_var, tensor(std::vector<double>{0.9 + 1.4 / 3, 1.8 + 1.6 / 3}),
                        1e-15, 1e-15));
}

TEST(BatchNorm, EvaluationNormalisesWithRunningStatisticsAndLeavesThemAlone) {
  const Tensor x = tensor(std::vector<double>{3, 0, 5, -1}, {2, 2});
  Tensor running_mean = tensor(std::vector<double>{1, -1});
  Tensor running_var = tensor(std::vector<double>{4, 0.25});
  const uint64_t version = running_mean.version();
  // No affine parameters: (x - running_mean) / sqrt(running_var).
  const Tensor y = batch_norm(x, running_mean, running_var, Tensor(), Tensor(),
                              /*training=*/false, 0.1, /*eps=*/0.0);
  EXPECT_EQ(to_vector<double>(y), (std::vector<double>{1, 2, 2, 0}));
  EXPECT_EQ(to_vector<double>(running_mean), (std::vector<double>{1, -1}));
  EXPECT_EQ(to_vector<double>(running_var), (std::vector<double>{4, 0.25}));
  EXPECT_EQ(running_mean.version(), version);
}

TEST(BatchNorm, GradientsOfTheTinyBatchByHand) {
  // With dy = 1 everywhere: grad_bias = M = 4 per channel, grad_weight = sum(x_hat) = 0, and
  // grad_input = 0 (a constant shift of the output does not depend on the input once the batch
  // mean is subtracted).
  const Tensor x = tiny_batch().requires_grad_();
  const Tensor weight = tensor(std::vector<double>{2, 0.5}).requires_grad_();
  const Tensor bias = tensor(std::vector<double>{1, -1}).requires_grad_();
  batch_norm(x, Tensor(), Tensor(), weight, bias, true, 0.1, 0.0).sum().backward();
  EXPECT_TRUE(all_close(bias.grad(), tensor(std::vector<double>{4, 4}), 0, 0));
  EXPECT_TRUE(all_close(weight.grad(), zeros({2}, kFloat64), 1e-14, 0));
  EXPECT_TRUE(all_close(x.grad(), zeros({2, 2, 1, 2}, kFloat64), 1e-14, 0));
}

// ---- shapes, layouts, precision ----

TEST(BatchNorm, TwoThreeAndFourDimensionalInputsAgree) {
  // The same values per channel, seen as [N, C], [N, C, L] and [N, C, H, W].
  const Tensor x4 = wiggly({3, 2, 2, 2});
  const Tensor x3 = x4.reshape({3, 2, 4});
  const Tensor x2 = x4.permute({0, 2, 3, 1}).reshape({12, 2});  // rows of (C) values
  const Tensor weight = tensor(std::vector<double>{1.5, -0.5});
  const Tensor bias = tensor(std::vector<double>{0.25, 2});
  const Tensor y4 = batch_norm(x4, Tensor(), Tensor(), weight, bias, true);
  EXPECT_TRUE(all_close(batch_norm(x3, Tensor(), Tensor(), weight, bias, true),
                        y4.reshape({3, 2, 4}), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(batch_norm(x2, Tensor(), Tensor(), weight, bias, true),
                        y4.permute({0, 2, 3, 1}).reshape({12, 2}), 1e-12, 1e-12));
}

TEST(BatchNorm, ChannelsLastStaysChannelsLastAndNonContiguousInputWorks) {
  const Tensor x = wiggly({2, 3, 4, 5}, kFloat32);
  Tensor running_mean = zeros({3}), running_var = ones({3});
  Tensor running_mean_nhwc = zeros({3}), running_var_nhwc = ones({3});
  const Tensor weight = tensor({1.0, 2.0, 3.0}), bias = tensor({0.0, -1.0, 1.0});
  const Tensor expected = batch_norm(x, running_mean, running_var, weight, bias, true);
  const Tensor y = batch_norm(x.contiguous(MemoryFormat::ChannelsLast), running_mean_nhwc,
                              running_var_nhwc, weight, bias, true);
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(y, expected, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(running_mean_nhwc, running_mean, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(running_var_nhwc, running_var, 1e-6, 1e-6));
  // A transposed view (neither layout) is normalised like its contiguous copy.
  const Tensor transposed = x.transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(all_close(batch_norm(transposed, Tensor(), Tensor(), weight, bias, true),
                        batch_norm(x, Tensor(), Tensor(), weight, bias, true), 0, 0));
}

TEST(BatchNorm, ChannelsLastInputGetsAChannelsLastGradientWithTheSameValues) {
  const Tensor x = wiggly({2, 3, 4, 5}, kFloat32);
  const Tensor upstream = wiggly({2, 3, 4, 5}, kFloat32, 1.0);  // NCHW, for both
  Tensor leaf = x.detach().requires_grad_();
  Tensor leaf_nhwc = x.contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  const Tensor weight = tensor({1.0, 2.0, 3.0});
  batch_norm(leaf, Tensor(), Tensor(), weight, Tensor(), true).backward(upstream);
  batch_norm(leaf_nhwc, Tensor(), Tensor(), weight, Tensor(), true).backward(upstream);
  EXPECT_EQ(leaf_nhwc.grad().suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_EQ(leaf.grad().suggest_memory_format(), MemoryFormat::Contiguous);
  EXPECT_TRUE(all_close(leaf_nhwc.grad(), leaf.grad(), 1e-6, 1e-6));
}

// Note [Loops compiled for AVX-512 and AVX2] (ops/cpu/vector_versions.h): NCHW planes take loops
// compiled for AVX-512 where the CPU has it; channels-last ones (oneDNN off) the baseline loops.
// The arithmetic is the same, so the bits.
TEST(BatchNorm, BFloat16NchwAndChannelsLastGiveTheSameBits) {
  const testing::ScopedOnednn off(false);
  const Tensor x = wiggly({4, 8, 6, 6}, kFloat32).mul(3.0).add(0.5).to(kBFloat16);
  const Tensor upstream = wiggly({4, 8, 6, 6}, kFloat32, 1.0).to(kBFloat16);
  const Tensor weight = wiggly({8}, kFloat32, 2.0).add(1.0), bias = wiggly({8}, kFloat32, 3.0);
  Tensor nchw = x.detach().requires_grad_();
  Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  const Tensor y = batch_norm(nchw, Tensor(), Tensor(), weight, bias, true);
  const Tensor y_nhwc = batch_norm(nhwc, Tensor(), Tensor(), weight, bias, true);
  y.backward(upstream);
  y_nhwc.backward(upstream);
  EXPECT_TRUE(testing::bitwise_equal(y.detach(), y_nhwc.detach().contiguous()));
  EXPECT_TRUE(testing::bitwise_equal(nchw.grad(), nhwc.grad().contiguous()));
}

TEST(BatchNorm, SixteenBitInputKeepsFloat32StatisticsAndParameters) {
  // Values near 100 with a spread of about 2: float16 sums of 2048 of them would overflow
  // 65504, and its spacing near 100 (0.06) would swamp the variance; float32 statistics don't.
  const Tensor x32 = wiggly({8, 2, 16, 16}, kFloat32) + 100.0;
  const Tensor weight = tensor({1.0, 0.5}), bias = tensor({0.0, 1.0});
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor x = x32.to(dtype);
    Tensor running_mean = zeros({2}), running_var = ones({2});
    Tensor reference_mean = zeros({2}), reference_var = ones({2});
    const Tensor y = batch_norm(x, running_mean, running_var, weight, bias, true);
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(running_mean.dtype(), kFloat32);
    // The same (rounded) values in float32 give the reference.
    const Tensor expected =
        batch_norm(x.to(kFloat32), reference_mean, reference_var, weight, bias, true);
    EXPECT_TRUE(all_close(y, expected, 2e-2, 1e-2)) << dtype;
    EXPECT_TRUE(all_close(running_mean, reference_mean, 1e-5, 1e-6)) << dtype;
    EXPECT_TRUE(all_close(running_var, reference_var, 1e-5, 1e-5)) << dtype;
  }
}

TEST(BatchNorm, RunningStatisticsThatAreViewsOrSixteenBitAreUpdatedInPlace) {
  const Tensor x = tiny_batch().to(kFloat16);
  // Every other element of a [4] buffer: a non-contiguous running_mean.
  Tensor storage = tensor(std::vector<float>{0, 7, 1, 7});
  Tensor running_mean = storage.slice(0, 0, 4, 2);
  Tensor running_var = tensor(std::vector<double>{1, 2}).to(kFloat16);
  const uint64_t version = running_var.version();
  batch_norm(x, running_mean, running_var, Tensor(), Tensor(), true, 0.1, 0.0);
  EXPECT_TRUE(all_close(storage, tensor(std::vector<double>{0.3, 7, 1.1, 7}), 1e-6, 1e-6));
  EXPECT_TRUE(all_close(running_var, tensor(std::vector<double>{0.9 + 1.4 / 3, 1.8 + 1.6 / 3}),
                        2e-3, 2e-3));
  EXPECT_GT(running_var.version(), version);
}

// ---- errors ----

TEST(BatchNorm, BadArgumentsAreErrorsNamingTheOpAndShapes) {
  const Tensor x = zeros({2, 3, 4, 4});
  const Tensor c3 = zeros({3});
  EXPECT_ERROR_CONTAINS(batch_norm(zeros({6}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                        "batch_norm: expected an input of shape [N, C], [N, C, L] or [N, C, H, W], "
                        "got shape [6]");
  EXPECT_ERROR_CONTAINS(
      batch_norm(zeros({1, 2, 3, 4, 5}), Tensor(), Tensor(), Tensor(), Tensor(), true),
      "got shape [1, 2, 3, 4, 5]");
  EXPECT_ERROR_CONTAINS(
      batch_norm(zeros({2, 3}, kInt64), Tensor(), Tensor(), Tensor(), Tensor(), true),
      "batch_norm: expected a floating-point input");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, c3, zeros({4}), c3, true),
                        "batch_norm: expected weight of shape [3] (one value per channel of the "
                        "input of shape [2, 3, 4, 4]), got shape [4]");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, c3, c3, zeros({3, 1}), true),
                        "batch_norm: expected bias of shape [3]");
  EXPECT_ERROR_CONTAINS(batch_norm(x, zeros({2}), c3, c3, c3, true),
                        "batch_norm: expected running_mean of shape [3]");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, zeros({5}), c3, c3, false),
                        "batch_norm: expected running_var of shape [3]");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, c3, zeros({3}, kFloat64), c3, true),
                        "batch_norm: expected weight of dtype float32 like the input, got float64");
  EXPECT_ERROR_CONTAINS(batch_norm(x.to(kFloat16), c3, c3, zeros({3}, kFloat64), c3, true),
                        "batch_norm: expected weight of dtype float16 or float32 (the input is "
                        "float16), got float64");
  EXPECT_ERROR_CONTAINS(batch_norm(x, Tensor(), Tensor(), c3, c3, false),
                        "batch_norm: evaluation (training = false) normalises with running_mean "
                        "and running_var, but they are undefined");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, Tensor(), c3, c3, true),
                        "batch_norm: expected running_mean and running_var both defined or both "
                        "undefined, got only running_mean");
  EXPECT_ERROR_CONTAINS(batch_norm(zeros({1, 3, 1, 1}), c3, c3, c3, c3, true),
                        "batch_norm: expected more than 1 value per channel when training, got "
                        "input of shape [1, 3, 1, 1]");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, c3, c3, c3, true, 1.5),
                        "batch_norm: expected momentum in [0, 1], got 1.5");
  EXPECT_ERROR_CONTAINS(batch_norm(x, c3, c3, c3, c3, true, 0.1, -1.0),
                        "batch_norm: expected eps >= 0, got -1");
  // One value per channel is fine in evaluation.
  EXPECT_EQ(batch_norm(zeros({1, 3}), c3, ones({3}), c3, c3, false).sizes(), (Shape{1, 3}));
}

// ---- gradients (f64 central differences) ----

struct NormCase {
  Shape sizes;
  const char* what;
  // Which view of the (contiguous) leaf the op sees: identity, or a permutation to a layout.
  Shape to_base;
  Shape from_base;
};

const std::vector<NormCase>& norm_cases() {
  static const std::vector<NormCase> cases{
      {{4, 3}, "[N, C]", {0, 1}, {0, 1}},
      {{2, 3, 4}, "[N, C, L]", {0, 1, 2}, {0, 1, 2}},
      {{2, 2, 3, 3}, "[N, C, H, W]", {0, 1, 2, 3}, {0, 1, 2, 3}},
      {{1, 2, 3, 3}, "batch 1", {0, 1, 2, 3}, {0, 1, 2, 3}},
      {{2, 3, 2, 3}, "channels-last", {0, 2, 3, 1}, {0, 3, 1, 2}},
      {{2, 2, 3, 2}, "permuted view (CNHW)", {1, 0, 2, 3}, {1, 0, 2, 3}},
  };
  return cases;
}

void check_gradients(bool training, bool affine) {
  for (const NormCase& c : norm_cases()) {
    const int64_t channels = c.sizes[1];
    const Tensor base = wiggly(c.sizes).permute(c.to_base).contiguous().requires_grad_();
    const Tensor weight = affine ? wiggly({channels}, kFloat64, 3.0).requires_grad_() : Tensor();
    const Tensor bias = affine ? wiggly({channels}, kFloat64, 5.0).requires_grad_() : Tensor();
    // Running statistics away from the batch's, so evaluation differs from training.
    Tensor running_mean = full({channels}, 0.3, kFloat64);
    Tensor running_var = full({channels}, 1.7, kFloat64);
    std::vector<Tensor> inputs{base};
    if (affine) inputs.insert(inputs.end(), {weight, bias});
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(in[0].permute(c.from_base), running_mean, running_var,
                            affine ? in[1] : Tensor(), affine ? in[2] : Tensor(), training);
        },
        inputs);
    EXPECT_TRUE(result) << c.what << (training ? ", training" : ", evaluation")
                        << (affine ? ", affine" : ", no affine") << ": " << result.message;
  }
}

TEST(BatchNormGradcheck, TrainingWithAffine) { check_gradients(true, true); }
TEST(BatchNormGradcheck, TrainingWithoutAffine) { check_gradients(true, false); }
TEST(BatchNormGradcheck, EvaluationWithAffine) { check_gradients(false, true); }
TEST(BatchNormGradcheck, EvaluationWithoutAffine) { check_gradients(false, false); }

TEST(BatchNormGradcheck, OnlyTheParametersRequireGrad) {
  const Tensor x = wiggly({3, 2, 2, 2});
  const Tensor weight = wiggly({2}, kFloat64, 1.0).requires_grad_();
  const Tensor bias = wiggly({2}, kFloat64, 2.0).requires_grad_();
  for (bool training : {true, false}) {
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(x, full({2}, 0.1, kFloat64), full({2}, 2.0, kFloat64), in[0], in[1],
                            training);
        },
        {weight, bias});
    EXPECT_TRUE(result) << (training ? "training: " : "evaluation: ") << result.message;
  }
}

}  // namespace
}  // namespace minidl
