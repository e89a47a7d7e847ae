// Group normalisation on the CPU (PyTorch's values are in tests/nn/layers_reference_test.cpp):
// values by hand, agreement with layer_norm when there is one group per sample's values,
// 16-bit input with float32 statistics, channels-last and non-contiguous input, autocast, empty
// input, repeatable parameter gradients, errors, and f64 gradient checks.
#include "minidl/ops/group_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/layer_norm.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;

Tensor wiggly(const Shape& sizes, DType dtype = kFloat64, double phase = 0.0) {
  return testing::wiggly(sizes, dtype,
                         {.phase = phase, .amplitude = 2.0, .offset = 0.5, .step = 0.9});
}

TEST(GroupNorm, TwoGroupsByHand) {
  // One sample, 4 channels of 2 values, 2 groups: group 0 = {1, 2, 3, 6} (mean 3, variance
  // 3.5), group 1 = {0, 0, 4, 4} (mean 2, variance 4); weight and bias per channel.
  const Tensor x = tensor(std::vector<double>{1, 2, 3, 6, 0, 0, 4, 4}, {1, 4, 2});
  const Tensor weight = tensor(std::vector<double>{2, 1, 1, 0.5});
  const Tensor bias = tensor(std::vector<double>{1, 0, 0, -1});
  const double s = std::sqrt(3.5);
  const std::vector<double> expected{-2 / s * 2 + 1, -1 / s * 2 + 1, 0, 3 / s, -1, -1,
                                     1 * 0.5 - 1,    1 * 0.5 - 1};
  EXPECT_TRUE(
      all_close(group_norm(x, 2, weight, bias, 0.0), tensor(expected, {1, 4, 2}), 1e-14, 1e-14));
}

TEST(GroupNorm, OneGroupWithoutAffineIsLayerNormOverEachSample) {
  const Tensor x = wiggly({3, 4, 5, 2});
  EXPECT_TRUE(all_close(group_norm(x, 1), layer_norm(x, {4, 5, 2}), 1e-14, 1e-14));
  // A group per channel: instance normalisation, layer norm over each (sample, channel).
  EXPECT_TRUE(all_close(group_norm(x, 4), layer_norm(x, {5, 2}), 1e-14, 1e-14));
}

TEST(GroupNorm, SixteenBitInputHasFloat32StatisticsAndKeepsItsParametersDtypes) {
  const Tensor x32 = wiggly({2, 6, 8, 8}, kFloat32) + 100.0;
  const Tensor weight = wiggly({6}, kFloat32, 1.0), bias = wiggly({6}, kFloat32, 2.0);
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor x = x32.to(dtype).requires_grad_();
    const Tensor w = weight.clone().requires_grad_(), b = bias.clone().requires_grad_();
    const Tensor y = group_norm(x, 3, w, b);
    EXPECT_EQ(y.dtype(), dtype);
    // The float32 computation on the same rounded values, rounded once.
    const Tensor expected = group_norm(x.detach().to(kFloat32), 3, weight, bias).to(dtype);
    EXPECT_TRUE(bitwise_equal(y, expected)) << dtype;
    y.sum().backward();
    EXPECT_EQ(x.grad().dtype(), dtype);
    EXPECT_EQ(w.grad().dtype(), kFloat32);
    EXPECT_EQ(b.grad().dtype(), kFloat32);
  }
}

TEST(GroupNorm, ChannelsLastAndNonContiguousInputAreNormalisedLikeContiguousCopies) {
  const Tensor x = wiggly({2, 6, 3, 4}, kFloat32);
  const Tensor weight = wiggly({6}, kFloat32, 1.0), bias = wiggly({6}, kFloat32, 2.0);
  const Tensor expected = group_norm(x, 2, weight, bias);
  const Tensor last = x.contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  const Tensor y = group_norm(last, 2, weight, bias);
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(bitwise_equal(y.contiguous(), expected));
  y.backward(wiggly({2, 6, 3, 4}, kFloat32, 3.0).contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(last.grad().is_contiguous(MemoryFormat::ChannelsLast));
  const Tensor transposed = x.transpose(2, 3);
  EXPECT_TRUE(bitwise_equal(group_norm(transposed, 3), group_norm(transposed.contiguous(), 3)));
}

TEST(GroupNorm, RunsInFloat32UnderAutocast) {
  const Tensor x = wiggly({2, 4, 3}, kFloat32), weight = wiggly({4}, kFloat32, 1.0);
  amp::AutocastGuard autocast(kBFloat16);
  EXPECT_EQ(group_norm(x.to(kBFloat16), 2, weight).dtype(), kFloat32);
}

TEST(GroupNorm, EmptyInputGivesEmptyOutputAndZeroParameterGradients) {
  const Tensor x = zeros({0, 4, 3}).requires_grad_();
  const Tensor weight = ones({4}).requires_grad_(), bias = zeros({4}).requires_grad_();
  const Tensor y = group_norm(x, 2, weight, bias);
  EXPECT_EQ(y.sizes(), (Shape{0, 4, 3}));
  y.sum().backward();
  EXPECT_TRUE(all_close(weight.grad(), zeros({4}), 0, 0));
  EXPECT_TRUE(all_close(bias.grad(), zeros({4}), 0, 0));
}

TEST(GroupNorm, ParameterGradientsRepeatBitForBitAtEveryThreadCount) {
  const Tensor x = wiggly({8, 16, 20, 20}, kFloat32);
  auto parameter_grads = [&] {
    const Tensor w = ones({16}).requires_grad_(), b = zeros({16}).requires_grad_();
    group_norm(x, 4, w, b).backward(wiggly({8, 16, 20, 20}, kFloat32, 1.0));
    return std::vector<Tensor>{w.grad(), b.grad()};
  };
  const std::vector<Tensor> first = parameter_grads();
  for (int64_t threads : {1, 2, 3}) {
    testing::ScopedThreadCount scoped(threads);
    const std::vector<Tensor> again = parameter_grads();
    EXPECT_TRUE(bitwise_equal(again[0], first[0])) << threads;
    EXPECT_TRUE(bitwise_equal(again[1], first[1])) << threads;
  }
}

TEST(GroupNorm, BadArgumentsAreErrorsNamingTheOpExpectedAndFound) {
  const Tensor x = zeros({2, 6, 4});
  EXPECT_ERROR_CONTAINS(group_norm(Tensor(), 2),
                        "group_norm: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(group_norm(zeros({2, 6}, kInt64), 2),
                        "group_norm: expected a floating-point input (float32, float64, float16 or "
                        "bfloat16), got int64");
  EXPECT_ERROR_CONTAINS(group_norm(zeros({6}), 2),
                        "group_norm: expected an input of shape [N, C, *] (at least 2 dims), got "
                        "shape [6]");
  EXPECT_ERROR_CONTAINS(group_norm(x, 0), "group_norm: expected a positive num_groups, got 0");
  EXPECT_ERROR_CONTAINS(group_norm(x, 4),
                        "group_norm: expected the input's channels to be divisible by num_groups, "
                        "got input of shape [2, 6, 4] (C = 6) and num_groups = 4");
  EXPECT_ERROR_CONTAINS(group_norm(x, 2, zeros({4})),
                        "group_norm: expected weight of shape [6] (the input's channels), got "
                        "shape [4]");
  EXPECT_ERROR_CONTAINS(group_norm(x, 2, zeros({6}), zeros({1, 6})),
                        "group_norm: expected bias of shape [6] (the input's channels), got shape "
                        "[1, 6]");
  EXPECT_ERROR_CONTAINS(group_norm(x, 2, zeros({6}, kFloat64)),
                        "group_norm: expected weight of dtype float32 like the input, got float64");
  EXPECT_ERROR_CONTAINS(group_norm(x.to(kBFloat16), 2, zeros({6}, kFloat64)),
                        "group_norm: expected weight of dtype bfloat16 or float32 (the input is "
                        "bfloat16), got float64");
  EXPECT_ERROR_CONTAINS(group_norm(x, 2, Tensor(), Tensor(), -1.0),
                        "group_norm: expected eps >= 0, got -1");
}

TEST(GroupNormGradcheck, InputWeightAndBias) {
  struct Case {
    Shape sizes;
    int64_t groups;
    bool weight, bias;
    const char* what;
  };
  const std::vector<Case> cases{
      {{2, 4, 3}, 2, true, true, "[2, 4, 3], 2 groups, affine"},
      {{2, 6, 2, 2}, 3, true, true, "[2, 6, 2, 2], 3 groups, affine"},
      {{3, 4}, 2, true, false, "[N, C], weight without bias"},
      {{2, 4, 3}, 4, false, true, "a group per channel, bias without weight"},
      {{2, 2, 2, 1, 2}, 1, false, false, "rank 5, one group, no affine"},
  };
  for (const Case& c : cases) {
    const int64_t channels = c.sizes[1];
    std::vector<Tensor> inputs{wiggly(c.sizes).requires_grad_()};
    if (c.weight) inputs.push_back(wiggly({channels}, kFloat64, 3.0).requires_grad_());
    if (c.bias) inputs.push_back(wiggly({channels}, kFloat64, 5.0).requires_grad_());
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          const Tensor weight = c.weight ? in[1] : Tensor();
          const Tensor bias = c.bias ? in[c.weight ? 2 : 1] : Tensor();
          return group_norm(in[0], c.groups, weight, bias, 1e-5);
        },
        inputs);
    EXPECT_TRUE(result) << c.what << ": " << result.message;
  }
}

TEST(GroupNormGradcheck, ChannelsLastInput) {
  const Tensor leaf = wiggly({2, 4, 2, 3}).requires_grad_();
  const Tensor weight = wiggly({4}, kFloat64, 1.0).requires_grad_();
  auto result = gradcheck(
      [&](const std::vector<Tensor>& in) {
        return group_norm(in[0].contiguous(MemoryFormat::ChannelsLast), 2, in[1]);
      },
      {leaf, weight});
  EXPECT_TRUE(result) << result.message;
}

}  // namespace
}  // namespace minidl
