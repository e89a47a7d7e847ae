// Layer normalisation on the CPU: a row worked out by hand, PyTorch's values (float64, float32,
// bfloat16 and float16 input, normalized_shape of one and two dims, with and without weight and
// bias: tests/ops/layer_norm_reference.h), mixed precision, non-contiguous input, autocast,
// bitwise repeatability at every thread count, errors, and f64 gradient checks.
#include "minidl/ops/layer_norm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "layer_norm_reference.h"
#include "minidl/core/autocast.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;

// Sign-mixed values that differ from row to row, row-major over `sizes`.
Tensor wiggly(const Shape& sizes, DType dtype = kFloat64, double phase = 0.0) {
  return testing::wiggly(sizes, dtype,
                         {.phase = phase, .amplitude = 2.0, .offset = 0.5, .step = 0.9});
}

// ---- hand-worked values ----

TEST(LayerNorm, OneRowByHand) {
  // Row {1, 2, 3, 6}: mean 3, squared deviations 4 + 1 + 0 + 9 = 14, biased variance 3.5.
  // Row {0, 0, 4, 4}: mean 2, variance 4.
  const Tensor x = tensor(std::vector<double>{1, 2, 3, 6, 0, 0, 4, 4}, {2, 4});
  const Tensor weight = tensor(std::vector<double>{2, 1, 1, 0.5});
  const Tensor bias = tensor(std::vector<double>{1, 0, 0, -1});
  const Tensor y = layer_norm(x, {4}, weight, bias, /*eps=*/0.0);
  const double s = std::sqrt(3.5);
  const std::vector<double> expected{-2 / s * 2 + 1, -1 / s, 0, 3 / s * 0.5 - 1,
                                     -1 * 2 + 1,     -1,     1, 1 * 0.5 - 1};
  EXPECT_TRUE(all_close(y, tensor(expected, {2, 4}), 1e-14, 1e-14));
  // Without weight and bias: x_hat itself.
  EXPECT_TRUE(all_close(layer_norm(x, {4}, Tensor(), Tensor(), 0.0),
                        tensor(std::vector<double>{-2 / s, -1 / s, 0, 3 / s, -1, -1, 1, 1}, {2, 4}),
                        1e-14, 1e-14));
}

TEST(LayerNorm, GradientsOfAConstantUpstreamByHand) {
  // With dy = 1: grad_bias = rows = 2 per element and grad_weight = sum over rows of x_hat.
  const Tensor x = tensor(std::vector<double>{1, 2, 3, 6, 0, 0, 4, 4}, {2, 4}).requires_grad_();
  const Tensor weight = tensor(std::vector<double>{2, 1, 1, 0.5}).requires_grad_();
  const Tensor bias = zeros({4}, kFloat64).requires_grad_();
  layer_norm(x, {4}, weight, bias, 0.0).sum().backward();
  const double s = std::sqrt(3.5);
  EXPECT_TRUE(all_close(bias.grad(), full({4}, 2.0, kFloat64), 0, 0));
  EXPECT_TRUE(all_close(weight.grad(),
                        tensor(std::vector<double>{-2 / s - 1, -1 / s - 1, 1, 3 / s + 1}), 1e-14,
                        1e-14));
  // Without weight, grad_input = 0: a shift of the output does not depend on the input once the
  // mean is gone (with a weight that varies along the row it does).
  const Tensor leaf = x.detach().requires_grad_();
  layer_norm(leaf, {4}, Tensor(), Tensor(), 0.0).sum().backward();
  EXPECT_TRUE(all_close(leaf.grad(), zeros({2, 4}, kFloat64), 1e-14, 0));
  EXPECT_FALSE(all_close(x.grad(), zeros({2, 4}, kFloat64), 1e-3, 0));
}

// ---- PyTorch's values ----

DType dtype_named(std::string_view name) {
  if (name == "float64") return kFloat64;
  if (name == "bfloat16") return kBFloat16;
  if (name == "float16") return kFloat16;
  return kFloat32;
}

// |ours - PyTorch's| allowed, relative and absolute: about two units in the last place of the
// dtype (the two sum a row's terms in different orders).
double tolerance(DType dtype) {
  if (dtype == kFloat64) return 1e-12;
  if (dtype == kBFloat16) return 1.6e-2;
  if (dtype == kFloat16) return 2e-3;
  return 2e-5;
}

Tensor reference_tensor(const double* values, const Shape& sizes, DType dtype) {
  return tensor(std::vector<double>(values, values + shape_numel(sizes)), sizes).to(dtype);
}

TEST(LayerNorm, MatchesPyTorchOnEveryReferenceCase) {
  for (const testing::LayerNormReference& c : testing::kLayerNormReferences) {
    const Shape sizes(c.sizes, c.sizes + c.dim);
    const Shape normalized_shape(sizes.end() - c.normalized_dims, sizes.end());
    const DType dtype = dtype_named(c.dtype), parameter_dtype = dtype_named(c.parameter_dtype);
    const Tensor x = reference_tensor(c.input, sizes, dtype).requires_grad_();
    const Tensor weight =
        c.has_weight
            ? reference_tensor(c.weight, normalized_shape, parameter_dtype).requires_grad_()
            : Tensor();
    const Tensor bias =
        c.has_bias ? reference_tensor(c.bias, normalized_shape, parameter_dtype).requires_grad_()
                   : Tensor();
    const Tensor y = layer_norm(x, normalized_shape, weight, bias, c.eps);
    y.backward(reference_tensor(c.upstream, sizes, dtype));
    const double tol = tolerance(dtype);
    EXPECT_EQ(y.dtype(), dtype) << c.what;
    EXPECT_TRUE(all_close(y, reference_tensor(c.output, sizes, kFloat64), tol, tol)) << c.what;
    EXPECT_TRUE(all_close(x.grad(), reference_tensor(c.grad_input, sizes, kFloat64), tol, tol))
        << c.what;
    // The parameters' gradients sum over rows in float32 (float64), whatever the input's dtype;
    // for 16-bit input the reference holds them in float64 (see the script).
    const double parameter_tol = std::max(tolerance(parameter_dtype), 1e-4);
    if (c.has_weight) {
      EXPECT_EQ(weight.grad().dtype(), parameter_dtype) << c.what;
      EXPECT_TRUE(all_close(weight.grad(),
                            reference_tensor(c.grad_weight, normalized_shape, kFloat64),
                            parameter_tol, parameter_tol))
          << c.what;
    }
    if (c.has_bias) {
      EXPECT_EQ(bias.grad().dtype(), parameter_dtype) << c.what;
      EXPECT_TRUE(all_close(bias.grad(), reference_tensor(c.grad_bias, normalized_shape, kFloat64),
                            parameter_tol, parameter_tol))
          << c.what;
    }
  }
}

// ---- precision, layouts, autocast ----

TEST(LayerNorm, SixteenBitInputHasFloat32StatisticsAndKeepsItsParametersDtypes) {
  // Values near 100 with a spread of about 2: a 16-bit row sum of 512 of them would lose the
  // spread (float16's spacing near 100 is 0.06, and 51200 is near its 65504 limit); float32
  // statistics keep it.
  const Tensor x32 = wiggly({4, 512}, kFloat32) + 100.0;
  const Tensor weight = wiggly({512}, kFloat32, 1.0), bias = wiggly({512}, kFloat32, 2.0);
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor x = x32.to(dtype);
    const Tensor y = layer_norm(x, {512}, weight, bias);
    EXPECT_EQ(y.dtype(), dtype);
    // The same (rounded) values in float32 give the reference.
    EXPECT_TRUE(all_close(y, layer_norm(x.to(kFloat32), {512}, weight, bias), 2e-2, 1e-2)) << dtype;
    // Parameters of the input's dtype work too, and their gradients keep that dtype.
    const Tensor low_weight = weight.to(dtype).requires_grad_();
    layer_norm(x, {512}, low_weight, Tensor()).sum().backward();
    EXPECT_EQ(low_weight.grad().dtype(), dtype);
  }
}

TEST(LayerNorm, NonContiguousInputIsNormalisedLikeItsContiguousCopy) {
  const Tensor base = wiggly({6, 4, 5}, kFloat32);
  const Tensor transposed = base.transpose(0, 1);  // [4, 6, 5], not contiguous
  ASSERT_FALSE(transposed.is_contiguous());
  const Tensor weight = wiggly({6, 5}, kFloat32, 1.0), bias = wiggly({6, 5}, kFloat32, 2.0);
  EXPECT_TRUE(bitwise_equal(layer_norm(transposed, {6, 5}, weight, bias),
                            layer_norm(transposed.contiguous(), {6, 5}, weight, bias)));
  // And its gradient has the view's shape and values.
  const Tensor leaf = base.detach().requires_grad_();
  const Tensor copy = transposed.contiguous().requires_grad_();
  const Tensor upstream = wiggly({4, 6, 5}, kFloat32, 3.0);
  layer_norm(leaf.transpose(0, 1), {6, 5}, weight, bias).backward(upstream);
  layer_norm(copy, {6, 5}, weight, bias).backward(upstream);
  EXPECT_TRUE(bitwise_equal(leaf.grad().transpose(0, 1).contiguous(), copy.grad()));
}

TEST(LayerNorm, RunsInFloat32UnderAutocast) {
  for (DType low : {kFloat16, kBFloat16}) {
    const Tensor x = wiggly({3, 8}, low);
    const Tensor weight = wiggly({8}, kFloat32, 1.0).requires_grad_();
    const Tensor bias = wiggly({8}, kFloat32, 2.0).requires_grad_();
    amp::AutocastGuard autocast(low);
    const Tensor y = layer_norm(x, {8}, weight, bias);
    EXPECT_EQ(y.dtype(), kFloat32) << low;
    EXPECT_TRUE(all_close(y, layer_norm(x.to(kFloat32), {8}, weight, bias), 0, 0)) << low;
  }
}

TEST(LayerNorm, EmptyInputGivesEmptyOutputAndZeroParameterGradients) {
  const Tensor x = zeros({0, 3}, kFloat64).requires_grad_();
  const Tensor weight = ones({3}, kFloat64).requires_grad_();
  const Tensor bias = zeros({3}, kFloat64).requires_grad_();
  const Tensor y = layer_norm(x, {3}, weight, bias);
  EXPECT_EQ(y.sizes(), (Shape{0, 3}));
  y.sum().backward();
  EXPECT_TRUE(all_close(weight.grad(), zeros({3}, kFloat64), 0, 0));
  EXPECT_TRUE(all_close(bias.grad(), zeros({3}, kFloat64), 0, 0));
}

// ---- repeatability ----

// The forward pass and every gradient, with `threads` CPU threads.
std::vector<Tensor> run_with_threads(int64_t threads, DType dtype) {
  const testing::ScopedThreadCount scoped(threads);
  // 700 rows of 96: several tasks per pass, and 22 blocks of rows for the parameter sums.
  const Tensor x = wiggly({7, 100, 96}, kFloat32).to(dtype).requires_grad_();
  const Tensor weight = wiggly({96}, kFloat32, 1.0).requires_grad_();
  const Tensor bias = wiggly({96}, kFloat32, 2.0).requires_grad_();
  const Tensor y = layer_norm(x, {96}, weight, bias);
  y.backward(wiggly({7, 100, 96}, kFloat32, 3.0).to(dtype));
  return {y.detach(), x.grad(), weight.grad(), bias.grad()};
}

TEST(LayerNorm, SameBitsAtEveryThreadCount) {
  for (DType dtype : {kFloat32, kBFloat16}) {
    const std::vector<Tensor> one_thread = run_with_threads(1, dtype);
    for (int64_t threads : {2, 3, 4, 7}) {
      const std::vector<Tensor> many = run_with_threads(threads, dtype);
      const char* names[] = {"output", "grad_input", "grad_weight", "grad_bias"};
      for (size_t i = 0; i < many.size(); ++i)
        EXPECT_TRUE(bitwise_equal(many[i], one_thread[i]))
            << names[i] << ", " << dtype << ", " << threads << " threads";
    }
  }
}

// ---- errors ----

TEST(LayerNorm, BadArgumentsAreErrorsNamingTheOpExpectedAndFound) {
  const Tensor x = zeros({2, 3, 4});
  EXPECT_ERROR_CONTAINS(layer_norm(Tensor(), {4}),
                        "layer_norm: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(layer_norm(zeros({2, 4}, kInt64), {4}),
                        "layer_norm: expected a floating-point input (float32, float64, float16 or "
                        "bfloat16), got int64");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {}),
                        "layer_norm: expected a normalized_shape of at least one dim, got []");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {3}),
                        "layer_norm: expected an input whose last dims are [3] "
                        "(normalized_shape), got shape [2, 3, 4]");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {2, 3, 4, 1}), "got shape [2, 3, 4]");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {3, 4}, zeros({4})),
                        "layer_norm: expected weight of shape [3, 4] (normalized_shape), got "
                        "shape [4]");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {4}, zeros({4}), zeros({1, 4})),
                        "layer_norm: expected bias of shape [4] (normalized_shape), got shape "
                        "[1, 4]");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {4}, zeros({4}, kFloat64)),
                        "layer_norm: expected weight of dtype float32 like the input, got float64");
  EXPECT_ERROR_CONTAINS(layer_norm(x.to(kBFloat16), {4}, Tensor(), zeros({4}, kFloat16)),
                        "layer_norm: expected bias of dtype bfloat16 or float32 (the input is "
                        "bfloat16), got float16");
  EXPECT_ERROR_CONTAINS(layer_norm(x, {4}, Tensor(), Tensor(), -1.0),
                        "layer_norm: expected eps >= 0, got -1");
}

// ---- gradients (f64 central differences) ----

struct GradCase {
  Shape sizes;
  Shape normalized_shape;
  bool weight, bias;
  bool transposed;  // the op sees the leaf's transpose(0, 1), a non-contiguous view
  const char* what;
};

TEST(LayerNormGradcheck, InputWeightAndBias) {
  const std::vector<GradCase> cases{
      {{3, 5}, {5}, true, true, false, "[3, 5] over [5], affine"},
      {{3, 5}, {5}, false, false, false, "[3, 5] over [5], no affine"},
      {{2, 3, 4}, {3, 4}, true, true, false, "[2, 3, 4] over [3, 4], affine"},
      {{2, 3, 4}, {3, 4}, false, false, false, "[2, 3, 4] over [3, 4], no affine"},
      {{2, 2, 3}, {3}, true, false, false, "weight without bias"},
      {{2, 2, 3}, {3}, false, true, false, "bias without weight"},
      {{4, 2, 3}, {3}, true, true, true, "transposed view"},
      {{2, 1}, {1}, true, true, false, "rows of one element"},
  };
  for (const GradCase& c : cases) {
    const Tensor leaf = wiggly(c.sizes).requires_grad_();
    std::vector<Tensor> inputs{leaf};
    if (c.weight) inputs.push_back(wiggly(c.normalized_shape, kFloat64, 3.0).requires_grad_());
    if (c.bias) inputs.push_back(wiggly(c.normalized_shape, kFloat64, 5.0).requires_grad_());
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          const Tensor x = c.transposed ? in[0].transpose(0, 1) : in[0];
          const Tensor weight = c.weight ? in[1] : Tensor();
          const Tensor bias = c.bias ? in[c.weight ? 2 : 1] : Tensor();
          return layer_norm(x, c.normalized_shape, weight, bias, 1e-5);
        },
        inputs);
    EXPECT_TRUE(result) << c.what << ": " << result.message;
  }
}

TEST(LayerNormGradcheck, OnlyTheParametersRequireGrad) {
  const Tensor x = wiggly({3, 2, 4});
  const Tensor weight = wiggly({2, 4}, kFloat64, 1.0).requires_grad_();
  const Tensor bias = wiggly({2, 4}, kFloat64, 2.0).requires_grad_();
  auto result = gradcheck(
      [&](const std::vector<Tensor>& in) {
        return layer_norm(x, {2, 4}, in[0], in[1]);
      },
      {weight, bias});
  EXPECT_TRUE(result) << result.message;
}

}  // namespace
}  // namespace minidl
