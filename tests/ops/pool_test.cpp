// Pooling on the CPU: values against small cases worked out by hand, layouts (channels-last,
// permuted views, unbatched input), errors, and f64 gradient checks over a table of window
// geometries and layouts.
#include "minidl/ops/pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct values (a permutation of k / n - 0.5, at least 1/n apart, so an eps of 1e-6 never
// changes which element is a window's maximum), row-major over `sizes`.
Tensor distinct_values(const Shape& sizes, DType dtype = kFloat64) {
  const int64_t n = shape_numel(sizes);
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<double>((i * 7919) % n) / static_cast<double>(n) - 0.5;
  return from_host(values.data(), sizes, kFloat64).to(dtype);
}

Tensor plane(const std::vector<double>& values, int64_t height, int64_t width) {
  return from_host(values.data(), {1, 1, height, width}, kFloat64);
}

// How a test lays out an NCHW tensor in memory. The gradient checks perturb a contiguous base
// tensor and pool the view `from_base` of it, so the op sees the strides under test.
struct Layout {
  const char* name;
  Shape to_base;    // permutation giving the base tensor's memory order
  Shape from_base;  // permutation back to logical NCHW
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all{
      {"NCHW", {0, 1, 2, 3}, {0, 1, 2, 3}},
      {"channels-last (NHWC)", {0, 2, 3, 1}, {0, 3, 1, 2}},
      {"permuted view (CNHW)", {1, 0, 2, 3}, {1, 0, 2, 3}},
  };
  return all;
}

Tensor base_of(const Tensor& nchw, const Layout& layout) {
  return nchw.permute(layout.to_base).contiguous();
}

// ---- max_pool2d: hand-worked values ----

TEST(MaxPool2d, FourByFourInputPooledTwoByTwo) {
  const Tensor x = plane({1, 5, 2, 0,  //
                          3, 4, 8, 6,  //
                          7, 0, 1, 2,  //
                          9, 3, 4, 11},
                         4, 4)
                       .requires_grad_();
  Tensor y = max_pool2d(x, 2);
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(to_vector<double>(y), (std::vector<double>{5, 8, 9, 11}));
  // Each window's gradient goes to its maximum only.
  y.backward(plane({10, 20, 30, 40}, 2, 2));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0, 10, 0, 0,  //
                                                              0, 0, 20, 0,  //
                                                              0, 0, 0, 0,   //
                                                              30, 0, 0, 40}));
}

TEST(MaxPool2d, OverlappingWindowsAddTheirGradientsAtASharedMaximum) {
  // Kernel 2, stride 1 over a 3x3 plane: the centre 9 is the maximum of all four windows.
  const Tensor x = plane({1, 2, 3, 4, 9, 5, 6, 7, 8}, 3, 3).requires_grad_();
  Tensor y = max_pool2d(x, 2, 1);
  EXPECT_EQ(to_vector<double>(y), (std::vector<double>{9, 9, 9, 9}));
  y.backward(plane({1, 2, 3, 4}, 2, 2));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0, 0, 0, 0, 10, 0, 0, 0, 0}));
}

TEST(MaxPool2d, PaddingNeverWinsAndTiesGoToTheFirstElement) {
  // All values negative: a zero pad would win if padding were zeros rather than -inf.
  const Tensor x = plane({-5, -1, -3, -2}, 2, 2).requires_grad_();
  Tensor y = max_pool2d(x, 3, 1, 1);  // every window covers the whole 2x2 plane
  EXPECT_EQ(to_vector<double>(y), (std::vector<double>{-1, -1, -1, -1}));
  const Tensor ties = plane({4, 4, 4, 4}, 2, 2).requires_grad_();
  max_pool2d(ties, 2).backward(plane({1}, 1, 1));
  EXPECT_EQ(to_vector<double>(ties.grad()), (std::vector<double>{1, 0, 0, 0}));
}

TEST(MaxPool2d, StrideDefaultsToTheKernelAndMayDifferPerAxis) {
  const Tensor x = distinct_values({2, 3, 6, 7});
  EXPECT_TRUE(all_close(max_pool2d(x, 2), max_pool2d(x, 2, 2), 0, 0));
  EXPECT_EQ(max_pool2d(x, 2).sizes(), (Shape{2, 3, 3, 3}));
  EXPECT_EQ(max_pool2d(x, {3, 2}, Size2{1, 2}, {1, 0}).sizes(), (Shape{2, 3, 6, 3}));
  EXPECT_EQ(max_pool2d(x, 3, std::nullopt, 1).sizes(), (Shape{2, 3, 2, 3}));
}

TEST(MaxPool2d, NaNPropagatesAsPyTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> y = to_vector<double>(max_pool2d(plane({1, nan, 3, 4}, 2, 2), 2));
  EXPECT_TRUE(std::isnan(y[0]));
}

// ---- avg_pool2d: hand-worked values ----

TEST(AvgPool2d, ThreeByThreeWithPaddingCountingThePadOrNot) {
  // Input 1..9; kernel 3, stride 1, padding 1. The window of output (i, j) holds the real
  // elements of the 3x3 neighbourhood of (i, j): sums 12, 21, 16 / 27, 45, 33 / 24, 39, 28 over
  // 4, 6, 4 / 6, 9, 6 / 4, 6, 4 real elements.
  const Tensor x = plane({1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3);
  const Tensor with_pad = avg_pool2d(x, 3, 1, 1, /*count_include_pad=*/true);
  const std::vector<double> ninths{12, 21, 16, 27, 45, 33, 24, 39, 28};
  std::vector<double> expected;
  for (double sum : ninths) expected.push_back(sum / 9);
  EXPECT_TRUE(all_close(with_pad, plane(expected, 3, 3), 1e-15, 1e-15));
  const Tensor without_pad = avg_pool2d(x, 3, 1, 1, /*count_include_pad=*/false);
  EXPECT_TRUE(
      all_close(without_pad, plane({3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7}, 3, 3), 1e-15, 1e-15));
}

TEST(AvgPool2d, BackwardSpreadsEachGradientOverItsWindow) {
  // Kernel 2, stride 2, padding 1 on 2x2 with count_include_pad: each output window holds one
  // real element and three pads, so each element gets a quarter of its output's gradient.
  const Tensor x = plane({1, 2, 3, 4}, 2, 2).requires_grad_();
  Tensor y = avg_pool2d(x, 2, 2, 1);
  EXPECT_EQ(to_vector<double>(y), (std::vector<double>{0.25, 0.5, 0.75, 1}));
  y.backward(plane({4, 8, 12, 16}, 2, 2));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{1, 2, 3, 4}));
  const Tensor z = plane({1, 2, 3, 4}, 2, 2).requires_grad_();
  Tensor mean_of_real = avg_pool2d(z, 2, 2, 1, /*count_include_pad=*/false);
  EXPECT_EQ(to_vector<double>(mean_of_real), (std::vector<double>{1, 2, 3, 4}));
}

// ---- adaptive_avg_pool2d: hand-worked values ----

TEST(AdaptiveAvgPool2d, WindowsFollowPyTorchsStartAndEndFormula) {
  // 5 -> 3: windows [0, 2), [1, 4), [3, 5).
  const Tensor row = plane({1, 2, 3, 4, 5}, 1, 5);
  EXPECT_EQ(to_vector<double>(adaptive_avg_pool2d(row, {1, 3})),
            (std::vector<double>{1.5, 3, 4.5}));
  // 2 -> 3 (larger than the input): windows [0, 1), [0, 2), [1, 2).
  EXPECT_EQ(to_vector<double>(adaptive_avg_pool2d(plane({1, 3}, 1, 2), {1, 3})),
            (std::vector<double>{1, 2, 3}));
  // Divisible sizes are plain average pooling; output size 1 is the global mean.
  const Tensor x = distinct_values({2, 3, 4, 6});
  EXPECT_TRUE(all_close(adaptive_avg_pool2d(x, {2, 3}), avg_pool2d(x, 2), 1e-15, 1e-15));
  EXPECT_TRUE(
      all_close(adaptive_avg_pool2d(x, 1), mean(x, {2, 3}, /*keepdim=*/true), 1e-15, 1e-15));
}

// ---- layouts and ranks ----

TEST(Pooling, ChannelsLastInputGivesChannelsLastOutputAndGradientWithTheSameValues) {
  const Tensor x = distinct_values({2, 3, 5, 6}, kFloat32);
  const Tensor x_nhwc = x.contiguous(MemoryFormat::ChannelsLast);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops{
      {"max_pool2d", [](const Tensor& t) { return max_pool2d(t, 3, 2, 1); }},
      {"avg_pool2d", [](const Tensor& t) { return avg_pool2d(t, 2, 1, 1, false); }},
      {"adaptive_avg_pool2d",
       [](const Tensor& t) {
         return adaptive_avg_pool2d(t, {2, 4});
       }},
  };
  for (const auto& [name, op] : ops) {
    Tensor leaf = x.detach().requires_grad_(), leaf_nhwc = x_nhwc.detach().requires_grad_();
    const Tensor expected = op(leaf);
    const Tensor y = op(leaf_nhwc);
    EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast) << name;
    EXPECT_EQ(expected.suggest_memory_format(), MemoryFormat::Contiguous) << name;
    EXPECT_TRUE(all_close(y, expected, 0, 0)) << name;
    // The upstream gradient is NCHW (ones_like), the input's gradient follows the input.
    expected.backward(ones_like(expected));
    y.backward(ones_like(y));
    EXPECT_EQ(leaf_nhwc.grad().suggest_memory_format(), MemoryFormat::ChannelsLast) << name;
    EXPECT_EQ(leaf.grad().suggest_memory_format(), MemoryFormat::Contiguous) << name;
    EXPECT_TRUE(all_close(leaf_nhwc.grad(), leaf.grad(), 0, 0)) << name;
  }
}

TEST(Pooling, UnbatchedInputGivesUnbatchedOutput) {
  const Tensor x = distinct_values({3, 5, 5});
  const Tensor batched = x.unsqueeze(0);
  EXPECT_TRUE(all_close(max_pool2d(x, 2), max_pool2d(batched, 2).squeeze(0), 0, 0));
  EXPECT_TRUE(all_close(avg_pool2d(x, 3, 2, 1), avg_pool2d(batched, 3, 2, 1).squeeze(0), 0, 0));
  EXPECT_EQ(adaptive_avg_pool2d(x, 2).sizes(), (Shape{3, 2, 2}));
  auto result = gradcheck([](const std::vector<Tensor>& in) { return max_pool2d(in[0], 2, 1); },
                          {distinct_values({2, 3, 3}).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
}

TEST(Pooling, EmptyBatchAndSixteenBitInputs) {
  EXPECT_EQ(max_pool2d(zeros({0, 3, 4, 4}), 2).sizes(), (Shape{0, 3, 2, 2}));
  const Tensor x = distinct_values({1, 2, 4, 4}, kFloat32);
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor y = avg_pool2d(x.to(dtype), 2);
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_TRUE(all_close(y, avg_pool2d(x, 2), 1e-2, 1e-2)) << dtype;
    EXPECT_TRUE(
        all_close(max_pool2d(x.to(dtype), 2), max_pool2d(x.to(dtype).to(kFloat32), 2), 0, 0))
        << dtype;
  }
}

// ---- errors ----

TEST(Pooling, BadArgumentsAreErrorsNamingTheOpAndShapes) {
  const Tensor x = zeros({1, 2, 4, 4});
  EXPECT_ERROR_CONTAINS(max_pool2d(zeros({4, 4}), 2),
                        "max_pool2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got "
                        "shape [4, 4]");
  EXPECT_ERROR_CONTAINS(avg_pool2d(zeros({1, 1, 1, 4, 4}), 2),
                        "avg_pool2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input");
  EXPECT_ERROR_CONTAINS(max_pool2d(zeros({1, 2, 4, 4}, kInt64), 2),
                        "max_pool2d: expected a floating-point input");
  EXPECT_ERROR_CONTAINS(max_pool2d(x, 5),
                        "max_pool2d: kernel [5, 5] is larger than the padded input [4, 4] "
                        "(input of shape [1, 2, 4, 4] with padding [0, 0])");
  EXPECT_ERROR_CONTAINS(avg_pool2d(x, {7, 2}, 1, {1, 0}),
                        "avg_pool2d: kernel [7, 2] is larger than the padded input [6, 4]");
  EXPECT_ERROR_CONTAINS(max_pool2d(x, 3, 1, 2),
                        "max_pool2d: expected padding at most half the kernel size (at most "
                        "[1, 1] for kernel [3, 3]), got padding [2, 2]");
  EXPECT_ERROR_CONTAINS(avg_pool2d(x, 2, 1, {0, 2}),
                        "avg_pool2d: expected padding at most half the kernel size");
  EXPECT_ERROR_CONTAINS(max_pool2d(x, 2, 0), "max_pool2d: expected a stride > 0, got [0, 0]");
  EXPECT_ERROR_CONTAINS(max_pool2d(x, {0, 2}),
                        "max_pool2d: expected a kernel size > 0, got [0, 2]");
  EXPECT_ERROR_CONTAINS(max_pool2d(x, 2, 2, -1), "max_pool2d: expected padding >= 0, got [-1, -1]");
  EXPECT_ERROR_CONTAINS(max_pool2d(zeros({1, 2, 0, 4}), 1),
                        "max_pool2d: expected an input with non-zero C, H and W, got shape "
                        "[1, 2, 0, 4]");
  EXPECT_ERROR_CONTAINS(adaptive_avg_pool2d(x, {0, 2}),
                        "adaptive_avg_pool2d: expected an output size >= 1, got [0, 2]");
  EXPECT_ERROR_CONTAINS(adaptive_avg_pool2d(zeros({4}), 2),
                        "adaptive_avg_pool2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input");
}

// ---- gradients (f64 central differences) ----

struct WindowCase {
  Shape sizes;  // NCHW
  Size2 kernel;
  std::optional<Size2> stride;
  Size2 padding;
};

std::string describe(const WindowCase& c, const Layout& layout) {
  return shape_str(c.sizes) + " kernel [" + std::to_string(c.kernel.h) + ", " +
         std::to_string(c.kernel.w) + "] stride " +
         (c.stride ? "[" + std::to_string(c.stride->h) + ", " + std::to_string(c.stride->w) + "]"
                   : std::string("default")) +
         " padding [" + std::to_string(c.padding.h) + ", " + std::to_string(c.padding.w) + "], " +
         layout.name;
}

const std::vector<WindowCase>& window_cases() {
  static const std::vector<WindowCase> cases{
      {{1, 1, 4, 4}, 2, 2, 0},                      // batch 1, the classic 2x2
      {{2, 3, 5, 5}, 3, 1, 1},                      // overlapping, padded, odd size
      {{1, 2, 7, 5}, 3, 2, 1},                      // stride 2 with padding, odd sizes
      {{2, 1, 5, 6}, 2, 1, 0},                      // overlapping without padding
      {{1, 2, 5, 5}, 1, 2, 0},                      // kernel 1 skips elements
      {{1, 3, 5, 4}, 2, std::nullopt, 1},           // default stride, padding 1
      {{1, 1, 6, 7}, {3, 2}, Size2{2, 1}, {1, 0}},  // different per axis
  };
  return cases;
}

TEST(PoolGradcheck, MaxPoolOverWindowsAndLayouts) {
  for (const WindowCase& c : window_cases()) {
    for (const Layout& layout : layouts()) {
      const Tensor base = base_of(distinct_values(c.sizes), layout).requires_grad_();
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) {
            return max_pool2d(in[0].permute(layout.from_base), c.kernel, c.stride, c.padding);
          },
          {base});
      EXPECT_TRUE(result) << describe(c, layout) << ": " << result.message;
    }
  }
}

TEST(PoolGradcheck, AvgPoolOverWindowsLayoutsAndDivisors) {
  for (const WindowCase& c : window_cases()) {
    for (const Layout& layout : layouts()) {
      for (bool count_include_pad : {true, false}) {
        const Tensor base = base_of(distinct_values(c.sizes), layout).requires_grad_();
        auto result = gradcheck(
            [&](const std::vector<Tensor>& in) {
              return avg_pool2d(in[0].permute(layout.from_base), c.kernel, c.stride, c.padding,
                                count_include_pad);
            },
            {base});
        EXPECT_TRUE(result) << describe(c, layout) << " count_include_pad " << count_include_pad
                            << ": " << result.message;
      }
    }
  }
}

struct AdaptiveCase {
  Shape sizes;
  Size2 output_size;
  const char* what;
};

TEST(PoolGradcheck, AdaptiveAvgPoolDivisibleNotDivisibleLargerAndGlobal) {
  const std::vector<AdaptiveCase> cases{
      {{1, 2, 4, 4}, {2, 2}, "divisible"},
      {{2, 1, 5, 7}, {3, 2}, "not divisible"},
      {{1, 2, 3, 5}, {4, 7}, "larger than the input"},
      {{2, 2, 5, 3}, 1, "global"},
      {{1, 1, 5, 5}, {5, 5}, "identity"},
  };
  for (const AdaptiveCase& c : cases) {
    for (const Layout& layout : layouts()) {
      const Tensor base = base_of(distinct_values(c.sizes), layout).requires_grad_();
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) {
            return adaptive_avg_pool2d(in[0].permute(layout.from_base), c.output_size);
          },
          {base});
      EXPECT_TRUE(result) << c.what << ", " << layout.name << ": " << result.message;
    }
  }
}

}  // namespace
}  // namespace minidl
