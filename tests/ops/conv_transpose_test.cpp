// conv_transpose2d on the CPU (PyTorch's values are in tests/nn/layers_reference_test.cpp): a
// hand-worked output, the adjoint identity with conv2d, channels-last, degenerate shapes,
// autocast, every argument error, and f64 gradient checks of input, weight and bias over
// strides, padding, output_padding, dilation and groups.
#include "minidl/ops/conv_transpose.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

Tensor wiggly(const Shape& sizes, double phase = 0.0, DType dtype = kFloat64) {
  return testing::wiggly(sizes, phase, dtype);
}

struct Geometry {
  Size2 stride = 1, padding = 0, output_padding = 0;
  int64_t groups = 1;
  Size2 dilation = 1;
};

Tensor transposed(const Tensor& x, const Tensor& w, const Tensor& b, const Geometry& g) {
  return conv_transpose2d(x, w, b, g.stride, g.padding, g.output_padding, g.groups, g.dilation);
}

TEST(ConvTranspose2d, HandWorkedStrideTwoPlacesScaledKernels) {
  // Each input value stamps value * kernel at (2i, 2j); stamps overlap nowhere with a 2x2 kernel.
  const Tensor x = tensor(std::vector<double>{1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor w = tensor(std::vector<double>{1, 10, 100, 1000}, {1, 1, 2, 2});
  const Tensor y = conv_transpose2d(x, w, tensor(std::vector<double>{0.5}), 2);
  const std::vector<double> expected{1, 10, 2, 20, 100, 1000, 200, 2000,
                                     3, 30, 4, 40, 300, 3000, 400, 4000};
  std::vector<double> with_bias;
  for (double v : expected) with_bias.push_back(v + 0.5);
  EXPECT_TRUE(all_close(y, tensor(with_bias, {1, 1, 4, 4}), 0, 0));
  // Stride 1: the stamps overlap and add.
  const Tensor overlapping = conv_transpose2d(x, w);
  EXPECT_TRUE(all_close(
      overlapping,
      tensor(std::vector<double>{1, 12, 20, 103, 1234, 2040, 300, 3400, 4000}, {1, 1, 3, 3}), 0,
      0));
}

// <conv_transpose2d(x, w), z> = <x, conv2d(z, w)>: the defining property, with every option.
TEST(ConvTranspose2d, IsTheAdjointOfConv2d) {
  const std::vector<Geometry> geometries{
      {},
      {.stride = 2, .padding = 1, .output_padding = 1},
      {.stride = {2, 3}, .padding = {0, 1}, .output_padding = {1, 2}, .groups = 2},
      {.stride = 1, .padding = 1, .output_padding = 1, .dilation = 2},
  };
  for (const Geometry& g : geometries) {
    const Tensor x = wiggly({2, 4, 3, 4}), w = wiggly({4, 3, 3, 2}, 1.0);
    const Tensor y = transposed(x, w, Tensor(), g);
    const Tensor z = wiggly(y.sizes(), 2.0);
    Tensor back = conv2d(z, w, Tensor(), g.stride, g.padding, g.dilation, g.groups);
    back = back.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3));
    EXPECT_NEAR((y * z).sum().item<double>(), (x * back).sum().item<double>(), 1e-10);
  }
}

// float32 runs on oneDNN where it is built and switched on (float64 always on im2col): both
// give float64's values and gradients, with every option.
TEST(ConvTranspose2d, Float32MatchesFloat64WithEveryOption) {
  const std::vector<Geometry> geometries{
      {},
      {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2},
      {.stride = {2, 1}, .padding = {0, 1}, .output_padding = {1, 1}, .dilation = {1, 2}},
      {.stride = 3, .groups = 4},
  };
  for (const Geometry& g : geometries) {
    struct Results {
      Tensor y, grad_input, grad_weight, grad_bias;
    };
    auto run = [&](DType dtype) {
      const Tensor x = wiggly({3, 8, 5, 4}, 0.0, dtype).requires_grad_();
      const Tensor w = wiggly({8, 2, 3, 3}, 1.0, dtype).requires_grad_();
      const Tensor b = wiggly({2 * g.groups}, 2.0, dtype).requires_grad_();
      const Tensor y = transposed(x, w, b, g);
      y.backward(wiggly(y.sizes(), 3.0, dtype));
      return Results{y, x.grad(), w.grad(), b.grad()};
    };
    const Results single = run(kFloat32), exact = run(kFloat64);
    EXPECT_TRUE(all_close(single.y, exact.y, 1e-5, 1e-5)) << g.groups;
    EXPECT_TRUE(all_close(single.grad_input, exact.grad_input, 1e-5, 1e-5)) << g.groups;
    EXPECT_TRUE(all_close(single.grad_weight, exact.grad_weight, 1e-4, 1e-5)) << g.groups;
    EXPECT_TRUE(all_close(single.grad_bias, exact.grad_bias, 1e-4, 1e-5)) << g.groups;
  }
}

TEST(ConvTranspose2d, OutputSizesFollowPyTorchsFormula) {
  // (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
  EXPECT_EQ(
      conv_transpose2d_output_sizes({2, 3, 5, 7}, {3, 4, 3, 2}, 2, {2, 3}, {1, 0}, {1, 2}, {1, 2}),
      (Shape{2, 8, 4 * 2 - 2 + 2 + 1 + 1, 6 * 3 + 2 + 2 + 1}));
}

TEST(ConvTranspose2d, ChannelsLastInputGivesChannelsLastOutputAndGradient) {
  const Geometry g{.stride = 2, .padding = 1, .output_padding = 1};
  const Tensor w = wiggly({3, 4, 3, 3}, 1.0, kFloat32), b = wiggly({4}, 2.0, kFloat32);
  const Tensor x = wiggly({2, 3, 5, 4}, 0.0, kFloat32);
  const Tensor x_last = x.contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  const Tensor x_plain = x.clone().requires_grad_();
  const Tensor y_last = transposed(x_last, w, b, g), y_plain = transposed(x_plain, w, b, g);
  EXPECT_TRUE(y_last.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(all_close(y_last, y_plain, 1e-5, 1e-5));
  const Tensor upstream = wiggly(y_plain.sizes(), 3.0, kFloat32);
  y_last.backward(upstream);
  y_plain.backward(upstream);
  EXPECT_TRUE(x_last.grad().is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(all_close(x_last.grad(), x_plain.grad(), 1e-5, 1e-5));
}

TEST(ConvTranspose2d, SixteenBitInputMatchesFloat32) {
  const Tensor x = wiggly({2, 4, 3, 3}, 0.0, kFloat32), w = wiggly({4, 2, 3, 3}, 1.0, kFloat32);
  const Tensor expected = conv_transpose2d(x, w, Tensor(), 2, 1, 1);
  for (DType dtype : {kBFloat16, kFloat16}) {
    const Tensor y = conv_transpose2d(x.to(dtype), w.to(dtype), Tensor(), 2, 1, 1);
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_TRUE(all_close(y, expected, 0.1, 2e-2)) << dtype;
  }
}

TEST(ConvTranspose2d, RunsInTheAutocastDtype) {
  const Tensor x = wiggly({1, 2, 3, 3}, 0.0, kFloat32), w = wiggly({2, 3, 2, 2}, 1.0, kFloat32);
  amp::AutocastGuard autocast(kBFloat16);
  EXPECT_EQ(conv_transpose2d(x, w).dtype(), kBFloat16);
}

TEST(ConvTranspose2d, DegenerateShapes) {
  // No samples, no input channels, no output channels: the bias (or zeros) everywhere, zero
  // gradients.
  const Tensor b = tensor(std::vector<double>{1.5, -2});
  EXPECT_EQ(conv_transpose2d(zeros({0, 3, 2, 2}, kFloat64), wiggly({3, 2, 2, 2}), b).sizes(),
            (Shape{0, 2, 3, 3}));
  const Tensor x = zeros({2, 0, 2, 2}, kFloat64).requires_grad_();
  const Tensor w = zeros({0, 2, 2, 2}, kFloat64).requires_grad_();
  const Tensor y = conv_transpose2d(x, w, b);
  EXPECT_TRUE(all_close(y.select(1, 0), full({2, 3, 3}, 1.5, kFloat64), 0, 0));
  EXPECT_TRUE(all_close(y.select(1, 1), full({2, 3, 3}, -2.0, kFloat64), 0, 0));
  y.sum().backward();
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  EXPECT_EQ(conv_transpose2d(wiggly({1, 2, 2, 2}), zeros({2, 0, 2, 2}, kFloat64)).sizes(),
            (Shape{1, 0, 3, 3}));
}

TEST(ConvTranspose2d, BadArgumentsAreErrorsNamingTheOpExpectedAndFound) {
  const Tensor x = zeros({1, 4, 3, 3}), w = zeros({4, 2, 3, 3});
  EXPECT_ERROR_CONTAINS(conv_transpose2d(Tensor(), w),
                        "conv_transpose2d: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(zeros({4, 3, 3}), w),
                        "conv_transpose2d: expected a 4-D input [N, C_in, H, W], got shape "
                        "[4, 3, 3]");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, zeros({4, 2, 3})),
                        "conv_transpose2d: expected a 4-D weight [C_in, C_out / groups, kH, kW], "
                        "got shape [4, 2, 3]");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, zeros({4, 2, 3, 3}, kFloat64)),
                        "conv_transpose2d: expected input, weight and bias of one dtype, got "
                        "input float32 and weight float64");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(zeros({1, 4, 3, 3}, kInt64), zeros({4, 2, 3, 3}, kInt64)),
                        "conv_transpose2d: expected floating-point tensors");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, zeros({3, 2, 3, 3})),
                        "conv_transpose2d: channel mismatch: input of shape [1, 4, 3, 3] has "
                        "C_in = 4, but weight of shape [3, 2, 3, 3] expects weight.size(0) = C_in");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, Tensor(), 1, 0, 0, 3),
                        "conv_transpose2d: groups = 3 must divide the input channels C_in = 4");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, Tensor(), 1, 0, 0, 0),
                        "conv_transpose2d: expected groups >= 1, got 0");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, zeros({4}), 1, 0, 0, 1),
                        "conv_transpose2d: expected a bias of shape [2] (weight.size(1) * groups), "
                        "got shape [4]");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, zeros({2}), 0),
                        "conv_transpose2d: expected a positive stride, got (0, 0)");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, Tensor(), 1, {0, -1}),
                        "conv_transpose2d: expected a non-negative padding, got (0, -1)");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, Tensor(), 1, 0, 0, 1, {1, 0}),
                        "conv_transpose2d: expected a positive dilation, got (1, 0)");
  // PyTorch's rule: output_padding below max(stride, dilation).
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, Tensor(), 2, 0, {2, 1}),
                        "conv_transpose2d: output padding must be smaller than either stride or "
                        "dilation, but got output_padding (2, 1), stride (2, 2) and dilation "
                        "(1, 1)");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, w, Tensor(), 1, 0, 1),
                        "output padding must be smaller than either stride or dilation");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(zeros({1, 4, 1, 1}), w, Tensor(), 1, 2),
                        "conv_transpose2d: given input size per channel (1 x 1), the calculated "
                        "output size per channel (-1 x -1) is too small");
  EXPECT_ERROR_CONTAINS(conv_transpose2d(x, zeros({4, 2, 0, 3})),
                        "conv_transpose2d: expected a kernel of positive size");
}

TEST(ConvTranspose2dGradcheck, InputWeightAndBiasOverTheGeometries) {
  struct Case {
    Shape input, weight;
    Geometry geometry;
    bool bias;
    const char* what;
  };
  const std::vector<Case> cases{
      {{2, 3, 3, 3}, {3, 2, 2, 2}, {}, true, "stride 1"},
      {{1, 2, 3, 2},
       {2, 3, 3, 3},
       {.stride = 2, .padding = 1, .output_padding = 1},
       true,
       "stride 2, padding 1, output_padding 1"},
      {{2, 4, 2, 3}, {4, 1, 2, 3}, {.stride = {1, 2}, .groups = 2}, false, "groups 2"},
      {{1, 2, 3, 3},
       {2, 2, 2, 2},
       {.stride = 1, .padding = 1, .output_padding = 1, .dilation = 2},
       true,
       "output_padding >= stride under dilation 2"},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> inputs{wiggly(c.input).requires_grad_(),
                               wiggly(c.weight, 1.0).requires_grad_()};
    const int64_t out_channels = c.weight[1] * c.geometry.groups;
    if (c.bias) inputs.push_back(wiggly({out_channels}, 2.0).requires_grad_());
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return transposed(in[0], in[1], c.bias ? in[2] : Tensor(), c.geometry);
        },
        inputs);
    EXPECT_TRUE(result) << c.what << ": " << result.message;
  }
}

TEST(ConvTranspose2dGradcheck, OnlyTheWeightRequiresGrad) {
  const Tensor x = wiggly({2, 2, 3, 3}), w = wiggly({2, 2, 2, 2}, 1.0).requires_grad_();
  auto result = gradcheck(
      [&](const std::vector<Tensor>& in) { return conv_transpose2d(x, in[0], Tensor(), 2); }, {w});
  EXPECT_TRUE(result) << result.message;
}

}  // namespace
}  // namespace minidl
