// Double backward (create_graph): second-order gradchecks (minidl::gradgradcheck) of the
// element-wise, matmul, reduction, activation, softmax and view/shape ops; second derivatives,
// Hessian-vector products, backward(create_graph) and a gradient-penalty training run against
// PyTorch (tests/core/double_backward_reference.h, written by
// tools/reference/make_double_backward_reference.py); the error for an op whose backward is not
// differentiable yet; and that without create_graph the gradients carry no graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/double_backward_inputs.h"
#include "core/double_backward_reference.h"
#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/einsum.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/layer_norm.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/pool.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace ref = double_backward_reference;
using double_backward_inputs::Fn;
using double_backward_inputs::leaf;
using double_backward_inputs::wig;

Tensor values(const std::vector<double>& expected, const Shape& sizes) {
  return tensor(expected, sizes);
}

// ---- second-order gradchecks ----

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  double amplitude, offset;  // of the input's values (each op's domain)
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"exp", [](const Tensor& x) { return exp(x); }, 1.5, 0.0},
      {"log", [](const Tensor& x) { return log(x); }, 0.5, 1.2},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.5, 1.2},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.5, 1.2},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, 0.5, 1.2},
      {"square", [](const Tensor& x) { return square(x); }, 1.5, 0.0},
      {"pow 2.5", [](const Tensor& x) { return pow(x, 2.5); }, 0.5, 1.2},
      {"pow -1.5", [](const Tensor& x) { return pow(x, -1.5); }, 0.5, 1.2},
      {"pow 0", [](const Tensor& x) { return pow(x, 0.0) * x; }, 0.5, 1.2},
      {"sin", [](const Tensor& x) { return sin(x); }, 1.5, 0.0},
      {"cos", [](const Tensor& x) { return cos(x); }, 1.5, 0.0},
      {"tan", [](const Tensor& x) { return tan(x); }, 1.0, 0.0},
      {"asin", [](const Tensor& x) { return asin(x); }, 0.8, 0.0},
      {"acos", [](const Tensor& x) { return acos(x); }, 0.8, 0.0},
      {"atan", [](const Tensor& x) { return atan(x); }, 1.5, 0.0},
      {"sinh", [](const Tensor& x) { return sinh(x); }, 1.5, 0.0},
      {"cosh", [](const Tensor& x) { return cosh(x); }, 1.5, 0.0},
      {"tanh", [](const Tensor& x) { return tanh(x); }, 1.5, 0.0},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, 1.5, 0.0},
      {"exp2", [](const Tensor& x) { return exp2(x); }, 1.5, 0.0},
      {"expm1", [](const Tensor& x) { return expm1(x); }, 1.5, 0.0},
      {"log1p", [](const Tensor& x) { return log1p(x); }, 0.5, 0.2},
      {"log2", [](const Tensor& x) { return log2(x); }, 0.5, 1.2},
      {"log10", [](const Tensor& x) { return log10(x); }, 0.5, 1.2},
      {"erf", [](const Tensor& x) { return erf(x); }, 1.5, 0.0},
      {"erfc", [](const Tensor& x) { return erfc(x); }, 1.5, 0.0},
      {"gelu", [](const Tensor& x) { return gelu(x); }, 1.5, 0.0},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, 1.5, 0.0},
      {"silu", [](const Tensor& x) { return silu(x); }, 1.5, 0.0},
      {"softplus", [](const Tensor& x) { return softplus(x); }, 1.5, 0.0},
      {"softplus beta 2 threshold 1", [](const Tensor& x) { return softplus(x, 2.0, 1.0); }, 1.5,
       0.0},
      {"elu", [](const Tensor& x) { return elu(x); }, 1.5, 0.0},
      {"elu alpha 0.5", [](const Tensor& x) { return elu(x, 0.5); }, 1.5, 0.0},
      {"relu", [](const Tensor& x) { return relu(x); }, 1.5, 0.0},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, 1.5, 0.0},
      {"abs", [](const Tensor& x) { return abs(x); }, 1.5, 0.0},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x, -0.7, 0.8); }, 1.5, 0.0},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.6, 0.9); }, 1.5, 0.0},
      {"floor", [](const Tensor& x) { return floor(x) * x; }, 1.5, 0.3},
      {"ceil", [](const Tensor& x) { return ceil(x) * x; }, 1.5, 0.3},
      {"trunc", [](const Tensor& x) { return trunc(x) * x; }, 1.5, 0.3},
      {"round", [](const Tensor& x) { return round(x) * x; }, 1.5, 0.3},
      {"sign", [](const Tensor& x) { return sign(x) * x; }, 1.5, 0.3},
      {"frac", [](const Tensor& x) { return frac(x) * x; }, 1.5, 0.3},
      {"neg", [](const Tensor& x) { return neg(x) * x; }, 1.5, 0.0},
  };
}

TEST(DoubleBackward, GradgradcheckUnaryOps) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    // Values away from the kinks of the piecewise ops (+- eps must not cross one).
    Tensor x = leaf({2, 3}, 0.0, c.amplitude, c.offset);
    const auto fn = c.fn;
    EXPECT_TRUE(gradgradcheck([&fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {x}));
  }
}

TEST(DoubleBackward, GradgradcheckBinaryOps) {
  Tensor x = leaf({2, 3}, 0.0, 1.0, 2.0);
  Tensor y = leaf({3}, 1.0, 0.5, 1.5);  // broadcast over x's rows
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"add", [](const std::vector<Tensor>& t) { return add(t[0], t[1], 2.0) * t[0]; }},
      {"sub", [](const std::vector<Tensor>& t) { return sub(t[0], t[1]) * t[1]; }},
      {"mul", [](const std::vector<Tensor>& t) { return t[0] * t[1]; }},
      {"div", [](const std::vector<Tensor>& t) { return t[0] / t[1]; }},
      {"div by itself", [](const std::vector<Tensor>& t) { return t[1] / t[1]; }},
      {"scalars", [](const std::vector<Tensor>& t) { return (t[0] * 3.0 + 1.0) / 2.0 - t[1]; }},
      {"where", [](const std::vector<Tensor>& t) { return where(t[0] > 2.0, t[0] * t[1], t[1]); }},
      {"clone", [](const std::vector<Tensor>& t) { return (t[0] * t[1]).clone() * t[0]; }},
      {"maximum", [](const std::vector<Tensor>& t) { return square(maximum(t[0], t[1] + 1.0)); }},
      {"minimum", [](const std::vector<Tensor>& t) { return minimum(t[0], t[1] + 1.0) * t[1]; }},
      {"clamp with tensor bounds",
       [](const std::vector<Tensor>& t) { return square(clamp(t[0], t[1] + 1.0, t[1] + 1.8)); }},
      {"atan2", [](const std::vector<Tensor>& t) { return atan2(t[0], t[1]) * t[0]; }},
      {"fmod", [](const std::vector<Tensor>& t) { return square(fmod(t[0], t[1])) * t[1]; }},
      {"remainder",
       [](const std::vector<Tensor>& t) { return square(remainder(t[0], t[1] - 3.0)) * t[1]; }},
  };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(gradgradcheck(fn, {x, y}));
  }
}

// gradgradcheck differentiates the gradient that create_graph computes, whatever it is; this
// checks that gradient itself: the recorded formulas give the kernels' first derivatives.
TEST(DoubleBackward, RecordedFirstDerivativesEqualTheKernels) {
  Tensor x = leaf({2, 3}, 0.0, 1.0, 2.0);
  Tensor y = leaf({3}, 1.0, 0.5, 1.5);
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"atan2", [](const std::vector<Tensor>& t) { return atan2(t[0], t[1]); }},
      {"fmod", [](const std::vector<Tensor>& t) { return fmod(t[0], t[1]); }},
      {"remainder", [](const std::vector<Tensor>& t) { return remainder(t[0], t[1] - 3.0); }},
      {"div", [](const std::vector<Tensor>& t) { return t[0] / t[1]; }},
  };
  const Tensor w = wig({2, 3}, 4.0);
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    const std::vector<Tensor> kernels = autograd::grad({sum(fn({x, y}) * w)}, {x, y});
    const std::vector<Tensor> recorded =
        autograd::grad({sum(fn({x, y}) * w)}, {x, y}, {}, std::nullopt, /*create_graph=*/true);
    // The divisor's gradient depends on both operands, so it has a graph (fmod's and
    // remainder's first operand gets the incoming gradient as it is, which has none).
    EXPECT_NE(recorded[1].grad_fn(), nullptr);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(testing::all_close(recorded[i], kernels[i], 1e-12, 1e-12)) << "input " << i;
  }
}

TEST(DoubleBackward, GradgradcheckMatmulFamily) {
  const std::vector<std::pair<const char*, std::pair<Shape, Shape>>> shapes = {
      {"2-D", {{3, 4}, {4, 2}}},
      {"batched", {{2, 3, 4}, {2, 4, 2}}},
      {"shared b", {{2, 3, 4}, {4, 2}}},
      {"shared a", {{3, 4}, {2, 4, 2}}},
      {"batch of one", {{1, 3, 4}, {2, 4, 2}}},
      {"vectors", {{4}, {4}}},
      {"matrix-vector", {{3, 4}, {4}}},
      {"4-D", {{2, 2, 3, 4}, {2, 1, 4, 2}}},
  };
  for (const auto& [name, sizes] : shapes) {
    SCOPED_TRACE(name);
    Tensor a = leaf(sizes.first, 0.0, 0.5);
    Tensor b = leaf(sizes.second, 1.0, 0.5);
    // tanh makes the second derivative in a and b non-zero (matmul alone is bilinear).
    EXPECT_TRUE(gradgradcheck([](const std::vector<Tensor>& t) { return tanh(matmul(t[0], t[1])); },
                              {a, b}));
  }
  Tensor a = leaf({2, 3, 4}, 0.0, 0.5), b = leaf({2, 4, 2}, 1.0, 0.5);
  EXPECT_TRUE(
      gradgradcheck([](const std::vector<Tensor>& t) { return sin(bmm(t[0], t[1])); }, {a, b}));
  Tensor m = leaf({3, 2}, 2.0), c = leaf({3}, 3.0), d = leaf({4}, 4.0);
  const std::vector<std::pair<const char*, Fn>> built_on_matmul = {
      {"addmm",
       [](const std::vector<Tensor>& t) {
         return tanh(addmm(t[2], t[0].select(0, 0), t[1].select(0, 0), 0.5, 2.0));
       }},
      {"einsum",
       [](const std::vector<Tensor>& t) {
         return sin(einsum("bij,bjk->bik", {t[0], t[1]}));
       }},
      {"outer", [](const std::vector<Tensor>& t) { return square(outer(t[3], t[4])); }},
  };
  for (const auto& [name, fn] : built_on_matmul) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(gradgradcheck(fn, {a, b, m, c, d}));
  }
  Tensor x = leaf({2, 3, 4}, 2.0), w = leaf({5, 4}, 3.0, 0.5), bias = leaf({5}, 4.0);
  EXPECT_TRUE(
      gradgradcheck([](const std::vector<Tensor>& t) { return sigmoid(linear(t[0], t[1], t[2])); },
                    {x, w, bias}));
  EXPECT_TRUE(gradgradcheck(
      [](const std::vector<Tensor>& t) { return tanh(linear(t[0], t[1])) * t[0].sum(); }, {x, w}));
}

// Class targets for [3, 4] logits.
Tensor classes() { return tensor(std::vector<int64_t>{3, 0, 1}, {3}); }

TEST(DoubleBackward, GradgradcheckReductionsSoftmaxAndLosses) {
  Tensor x = leaf({3, 4}, 0.0, 1.5);
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"sum", [](const std::vector<Tensor>& t) { return square(sum(t[0] * t[0])); }},
      {"sum dims", [](const std::vector<Tensor>& t) { return exp(sum(t[0], {1}) * 0.5); }},
      {"sum keepdim", [](const std::vector<Tensor>& t) { return t[0] * sum(t[0], {0}, true); }},
      {"mean", [](const std::vector<Tensor>& t) { return square(mean(t[0] * t[0])); }},
      {"mean dims", [](const std::vector<Tensor>& t) { return t[0] * mean(t[0], {1}, true); }},
      {"var", [](const std::vector<Tensor>& t) { return var(t[0], {1}) * mean(t[0]); }},
      {"max", [](const std::vector<Tensor>& t) { return square(max(t[0] * t[0])); }},
      {"min", [](const std::vector<Tensor>& t) { return exp(min(t[0])) * t[0]; }},
      {"max dim", [](const std::vector<Tensor>& t) { return square(std::get<0>(max(t[0], 1))); }},
      {"min dim keepdim",
       [](const std::vector<Tensor>& t) { return std::get<0>(min(t[0], 0, true)) * t[0]; }},
      {"softmax", [](const std::vector<Tensor>& t) { return softmax(t[0], 1); }},
      {"softmax dim 0", [](const std::vector<Tensor>& t) { return softmax(t[0], 0) * t[0]; }},
      {"log_softmax", [](const std::vector<Tensor>& t) { return log_softmax(t[0], 1); }},
      {"log_softmax dim 0", [](const std::vector<Tensor>& t) { return log_softmax(t[0], 0); }},
      {"mse_loss", [](const std::vector<Tensor>& t) { return mse_loss(tanh(t[0]), t[0] * 0.5); }},
      {"cross_entropy",
       [](const std::vector<Tensor>& t) { return cross_entropy(t[0], classes()); }},
      {"cross_entropy of a transposed input",
       [](const std::vector<Tensor>& t) {
         return cross_entropy(t[0].t().contiguous().t() * 2.0, classes(), Reduction::Sum);
       }},
      {"cross_entropy none, smoothing, ignore_index",
       [](const std::vector<Tensor>& t) {
         return cross_entropy(t[0], classes(), Reduction::None, 0.2, 1);
       }},
      {"cross_entropy mean with an ignored row",
       [](const std::vector<Tensor>& t) {
         return cross_entropy(t[0], classes(), Reduction::Mean, 0.0, 3);
       }},
      {"nll_loss",
       [](const std::vector<Tensor>& t) { return nll_loss(log_softmax(t[0], 1), classes()); }},
  };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(gradgradcheck(fn, {x}));
  }
}

TEST(DoubleBackward, GradgradcheckViewAndShapeOps) {
  Tensor x = leaf({2, 3, 4}, 0.0, 1.5);
  Tensor y = leaf({2, 3, 4}, 1.0, 1.5);
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"reshape",
       [](const std::vector<Tensor>& t) {
         return tanh(t[0].reshape({6, 4})) * t[1].reshape({6, 4});
       }},
      {"view",
       [](const std::vector<Tensor>& t) {
         return square(t[0].view({4, 6}));
       }},
      {"transpose",
       [](const std::vector<Tensor>& t) {
         return sin(t[0].transpose(0, 2)) * t[1].transpose(0, 2);
       }},
      {"permute",
       [](const std::vector<Tensor>& t) {
         return square(t[0].permute({2, 0, 1}));
       }},
      {"expand",
       [](const std::vector<Tensor>& t) {
         return t[0].slice(1, 0, 1).expand({2, 3, 4}) * t[1];
       }},
      {"slice with step",
       [](const std::vector<Tensor>& t) { return square(t[0].slice(2, 1, 4, 2)); }},
      {"narrow and select",
       [](const std::vector<Tensor>& t) {
         return t[0].narrow(1, 1, 2) * t[1].select(1, 0).unsqueeze(1);
       }},
      {"squeeze and flatten",
       [](const std::vector<Tensor>& t) { return square(t[0].unsqueeze(0).squeeze(0).flatten()); }},
      {"cat",
       [](const std::vector<Tensor>& t) {
         return square(cat({t[0], t[1] * t[0]}, 1));
       }},
      {"stack",
       [](const std::vector<Tensor>& t) {
         return tanh(stack({t[0], t[1]}, 0)) * t[0];
       }},
      {"contiguous",
       [](const std::vector<Tensor>& t) { return square(t[0].transpose(1, 2).contiguous()); }},
  };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(gradgradcheck(fn, {x, y}));
  }
}

// gradgradcheck itself fails on a wrong second derivative: a custom-looking wrong first gradient
// is caught (the check can fail).
TEST(DoubleBackward, GradgradcheckReportsAMismatch) {
  Tensor x = leaf({3}, 0.0);
  // tanh's first gradient is exact, so only a deliberately perturbed second derivative fails:
  // compare a function whose gradient ignores part of its input through detach().
  GradcheckResult result =
      gradgradcheck([](const std::vector<Tensor>& t) { return t[0] * t[0].detach() * t[0]; }, {x});
  EXPECT_FALSE(result);
  EXPECT_NE(result.message.find("gradgradcheck"), std::string::npos) << result.message;
}

// ---- values against PyTorch ----

TEST(DoubleBackward, UnarySecondDerivativesMatchPyTorch) {
  const std::vector<std::pair<UnaryCase, const std::vector<double>*>> cases = {
      {{"exp", [](const Tensor& x) { return exp(x); }, 1.5, 0.0}, &ref::kSecondExp},
      {{"log", [](const Tensor& x) { return log(x); }, 0.5, 1.2}, &ref::kSecondLog},
      {{"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.5, 1.2}, &ref::kSecondSqrt},
      {{"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.5, 1.2}, &ref::kSecondRsqrt},
      {{"reciprocal", [](const Tensor& x) { return reciprocal(x); }, 0.5, 1.2},
       &ref::kSecondReciprocal},
      {{"square", [](const Tensor& x) { return square(x); }, 1.5, 0.0}, &ref::kSecondSquare},
      {{"pow 2.5", [](const Tensor& x) { return pow(x, 2.5); }, 0.5, 1.2}, &ref::kSecondPow25},
      {{"pow -1.5", [](const Tensor& x) { return pow(x, -1.5); }, 0.5, 1.2}, &ref::kSecondPowNeg15},
      {{"sin", [](const Tensor& x) { return sin(x); }, 1.5, 0.0}, &ref::kSecondSin},
      {{"cos", [](const Tensor& x) { return cos(x); }, 1.5, 0.0}, &ref::kSecondCos},
      {{"tan", [](const Tensor& x) { return tan(x); }, 1.0, 0.0}, &ref::kSecondTan},
      {{"asin", [](const Tensor& x) { return asin(x); }, 0.8, 0.0}, &ref::kSecondAsin},
      {{"acos", [](const Tensor& x) { return acos(x); }, 0.8, 0.0}, &ref::kSecondAcos},
      {{"atan", [](const Tensor& x) { return atan(x); }, 1.5, 0.0}, &ref::kSecondAtan},
      {{"sinh", [](const Tensor& x) { return sinh(x); }, 1.5, 0.0}, &ref::kSecondSinh},
      {{"cosh", [](const Tensor& x) { return cosh(x); }, 1.5, 0.0}, &ref::kSecondCosh},
      {{"tanh", [](const Tensor& x) { return tanh(x); }, 1.5, 0.0}, &ref::kSecondTanh},
      {{"sigmoid", [](const Tensor& x) { return sigmoid(x); }, 1.5, 0.0}, &ref::kSecondSigmoid},
      {{"exp2", [](const Tensor& x) { return exp2(x); }, 1.5, 0.0}, &ref::kSecondExp2},
      {{"expm1", [](const Tensor& x) { return expm1(x); }, 1.5, 0.0}, &ref::kSecondExpm1},
      {{"log1p", [](const Tensor& x) { return log1p(x); }, 0.5, 0.2}, &ref::kSecondLog1p},
      {{"log2", [](const Tensor& x) { return log2(x); }, 0.5, 1.2}, &ref::kSecondLog2},
      {{"log10", [](const Tensor& x) { return log10(x); }, 0.5, 1.2}, &ref::kSecondLog10},
      {{"erf", [](const Tensor& x) { return erf(x); }, 1.5, 0.0}, &ref::kSecondErf},
      {{"erfc", [](const Tensor& x) { return erfc(x); }, 1.5, 0.0}, &ref::kSecondErfc},
      {{"gelu", [](const Tensor& x) { return gelu(x); }, 1.5, 0.0}, &ref::kSecondGelu},
      {{"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, 1.5, 0.0},
       &ref::kSecondGeluTanh},
      {{"silu", [](const Tensor& x) { return silu(x); }, 1.5, 0.0}, &ref::kSecondSilu},
      {{"softplus", [](const Tensor& x) { return softplus(x); }, 1.5, 0.0}, &ref::kSecondSoftplus},
      {{"elu", [](const Tensor& x) { return elu(x); }, 1.5, 0.0}, &ref::kSecondElu},
      {{"softmax",
        [](const Tensor& x) {
          return softmax(x.reshape({2, 3}), 1);
        },
        1.5, 0.0},
       &ref::kSecondSoftmax},
      {{"log_softmax",
        [](const Tensor& x) {
          return log_softmax(x.reshape({2, 3}), 0);
        },
        1.5, 0.0},
       &ref::kSecondLogSoftmax},
  };
  for (const auto& [c, expected] : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = leaf({6}, 0.0, c.amplitude, c.offset);
    Tensor y = c.fn(x).reshape({-1});
    Tensor g = autograd::grad({y}, {x}, {wig({6}, 2.0)}, std::nullopt, /*create_graph=*/true)[0];
    ASSERT_TRUE(g.requires_grad());
    Tensor h = autograd::grad({g}, {x}, {wig({6}, 3.0)})[0];
    EXPECT_TRUE(testing::all_close(h, values(*expected, {6}), 1e-10, 1e-10));
  }
}

TEST(DoubleBackward, MulAndDivSecondDerivativesMatchPyTorch) {
  const std::vector<
      std::tuple<const char*, Fn, const std::vector<double>*, const std::vector<double>*>>
      cases = {
          {"mul", [](const std::vector<Tensor>& t) { return t[0] * t[1]; }, &ref::kSecondMulX,
           &ref::kSecondMulY},
          {"div", [](const std::vector<Tensor>& t) { return t[0] / t[1]; }, &ref::kSecondDivX,
           &ref::kSecondDivY},
      };
  for (const auto& [name, fn, expected_x, expected_y] : cases) {
    SCOPED_TRACE(name);
    Tensor x = leaf({2, 3}, 0.0, 1.0, 2.0);
    Tensor y = leaf({3}, 1.0, 0.5, 1.5);
    std::vector<Tensor> g =
        autograd::grad({fn({x, y})}, {x, y}, {wig({2, 3}, 2.0)}, std::nullopt, true);
    Tensor s = sum(g[0] * wig({2, 3}, 3.0)) + sum(g[1] * wig({3}, 4.0));
    std::vector<Tensor> h = autograd::grad({s}, {x, y});
    EXPECT_TRUE(testing::all_close(h[0], values(*expected_x, {2, 3}), 1e-10, 1e-10));
    EXPECT_TRUE(testing::all_close(h[1], values(*expected_y, {3}), 1e-10, 1e-10));
  }
}

TEST(DoubleBackward, CrossEntropySecondDerivativeMatchesPyTorch) {
  Tensor x = leaf({3, 4}, 0.0, 1.5);
  Tensor loss = cross_entropy(x, classes(), Reduction::Mean, 0.1);
  Tensor g = autograd::grad({loss}, {x}, {}, std::nullopt, true)[0];
  Tensor h = autograd::grad({sum(g * wig({3, 4}, 1.0))}, {x})[0];
  EXPECT_TRUE(testing::all_close(h, values(ref::kSecondCrossEntropy, {3, 4}), 1e-10, 1e-10));
}

TEST(DoubleBackward, HessianVectorProductsMatchPyTorch) {
  Tensor x = leaf({4, 3}, 0.0);
  Tensor w1 = leaf({5, 3}, 1.0, 0.5), b1 = leaf({5}, 2.0, 0.3);
  Tensor w2 = leaf({2, 5}, 3.0, 0.5), b2 = leaf({2}, 4.0, 0.3);
  Tensor loss = sum(sigmoid(linear(tanh(linear(x, w1, b1)), w2, b2)));
  std::vector<Tensor> g = autograd::grad({loss}, {x, w1}, {}, std::nullopt, true);
  Tensor s = sum(g[0] * wig({4, 3}, 5.0)) + sum(g[1] * wig({5, 3}, 6.0));
  std::vector<Tensor> hvp = autograd::grad({s}, {x, w1, w2});
  EXPECT_TRUE(testing::all_close(hvp[0], values(ref::kMlpHvpX, {4, 3}), 1e-10, 1e-10));
  EXPECT_TRUE(testing::all_close(hvp[1], values(ref::kMlpHvpW1, {5, 3}), 1e-10, 1e-10));
  EXPECT_TRUE(testing::all_close(hvp[2], values(ref::kMlpHvpW2, {2, 5}), 1e-10, 1e-10));

  Tensor a = leaf({2, 3, 4}, 0.0, 0.5), b = leaf({4, 2}, 1.0, 0.5);
  std::vector<Tensor> gab =
      autograd::grad({sum(tanh(matmul(a, b)))}, {a, b}, {}, std::nullopt, true);
  std::vector<Tensor> hab =
      autograd::grad({sum(gab[0] * wig({2, 3, 4}, 2.0)) + sum(gab[1] * wig({4, 2}, 3.0))}, {a, b});
  EXPECT_TRUE(testing::all_close(hab[0], values(ref::kBatchedMatmulHvpA, {2, 3, 4}), 1e-10, 1e-10));
  EXPECT_TRUE(testing::all_close(hab[1], values(ref::kBatchedMatmulHvpB, {4, 2}), 1e-10, 1e-10));
}

TEST(DoubleBackward, BackwardWithCreateGraphLeavesAGradWithAGraph) {
  Tensor x = leaf({4}, 0.0, 1.5);
  sum(pow(x, 3.0) * sin(x)).backward({}, std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_NE(x.grad().grad_fn(), nullptr);
  EXPECT_TRUE(testing::all_close(x.grad(), values(ref::kBackwardGrad, {4}), 1e-12, 1e-12));
  const Tensor u = wig({4}, 1.0);
  // retain_graph defaulted to create_graph: the first graph is still there for the second pass.
  Tensor h = autograd::grad({sum(x.grad() * u)}, {x}, {}, /*retain_graph=*/true)[0];
  EXPECT_TRUE(testing::all_close(h, values(ref::kBackwardSecond, {4}), 1e-10, 1e-10));
  // A plain second backward accumulates its gradient into .grad, as in PyTorch.
  sum(x.grad() * u).backward();
  EXPECT_TRUE(testing::all_close(x.grad(), values(ref::kBackwardAccumulated, {4}), 1e-10, 1e-10));
  // x.grad()'s graph holds x: the reference cycle PyTorch warns of. Reset it, as the docs say.
  x.set_grad(Tensor());
}

TEST(DoubleBackward, CreateGraphAccumulatesOutOfPlace) {
  Tensor x = leaf({3}, 0.0);
  sum(square(x)).backward({}, std::nullopt, true);
  const Tensor first = x.grad();
  sum(exp(x)).backward({}, std::nullopt, true);
  // The second pass made a new .grad (first + exp(x)) with a graph; the first is unchanged.
  EXPECT_FALSE(x.grad().is_same(first));
  EXPECT_NE(x.grad().grad_fn(), nullptr);
  EXPECT_TRUE(testing::all_close(first, 2.0 * wig({3}, 0.0), 1e-12, 1e-12));
  EXPECT_TRUE(testing::all_close(x.grad(), 2.0 * wig({3}, 0.0) + exp(wig({3}, 0.0)), 1e-12, 1e-12));
  // d/dx sum(.grad) = 2 + exp(x)
  Tensor h = autograd::grad({sum(x.grad())}, {x})[0];
  EXPECT_TRUE(testing::all_close(h, 2.0 + exp(wig({3}, 0.0)), 1e-12, 1e-12));
  x.set_grad(Tensor());  // breaks the leaf <-> gradient cycle (see the test above)
}

// A WGAN-GP style gradient penalty: ||d D(x) / dx||^2 added to the loss of a small MLP with tanh
// and relu, trained by plain SGD, step by step as PyTorch trains it.
TEST(DoubleBackward, GradientPenaltyTrainingMatchesPyTorch) {
  std::vector<Tensor> params = {leaf({6, 3}, 0.0, 0.5), leaf({6}, 1.0, 0.2),
                                leaf({6, 6}, 2.0, 0.4), leaf({6}, 3.0, 0.2),
                                leaf({1, 6}, 4.0, 0.5), leaf({1}, 5.0, 0.2)};
  const Tensor x = wig({5, 3}, 6.0), y = wig({5, 1}, 7.0, 0.5);
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    Tensor xin = x.clone().requires_grad_(true);
    Tensor out = linear(relu(linear(tanh(linear(xin, params[0], params[1])), params[2], params[3])),
                        params[4], params[5]);
    Tensor gx = autograd::grad({sum(out)}, {xin}, {}, std::nullopt, /*create_graph=*/true)[0];
    Tensor penalty = mean(sum(gx * gx, {1}));
    Tensor loss = mse_loss(out, y) + 10.0 * penalty;
    losses.push_back(loss.item<double>());
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor& p : params) {
      ASSERT_TRUE(p.grad().defined());
      p.sub_(p.grad(), 0.05);
      p.set_grad(Tensor());
    }
  }
  EXPECT_TRUE(
      testing::all_close(tensor(losses, {4}), values(ref::kPenaltyLosses, {4}), 1e-10, 1e-10));
  const std::vector<const std::vector<double>*> expected = {&ref::kPenaltyW1, &ref::kPenaltyB1,
                                                            &ref::kPenaltyW2, &ref::kPenaltyB2,
                                                            &ref::kPenaltyW3, &ref::kPenaltyB3};
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(
        testing::all_close(params[i], values(*expected[i], params[i].sizes()), 1e-10, 1e-10))
        << "parameter " << i;
}

// ---- the graph, and its absence ----

TEST(DoubleBackward, WithoutCreateGraphGradientsHaveNoGraph) {
  Tensor x = leaf({3}, 0.0);
  Tensor w = leaf({3}, 1.0);
  Tensor y = sum(tanh(x * w) * exp(x));
  std::vector<Tensor> grads = autograd::grad({y}, {x, w}, {}, /*retain_graph=*/true);
  for (const Tensor& g : grads) {
    EXPECT_FALSE(g.requires_grad());
    EXPECT_EQ(g.grad_fn(), nullptr);
  }
  y.backward();
  EXPECT_FALSE(x.grad().requires_grad());
  EXPECT_EQ(x.grad().grad_fn(), nullptr);
  // Grad mode is back on after each pass.
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(DoubleBackward, CreateGraphGradientsHaveAGraph) {
  Tensor x = leaf({3}, 0.0);
  Tensor g = autograd::grad({sum(exp(x) * x)}, {x}, {}, std::nullopt, true)[0];
  EXPECT_TRUE(g.requires_grad());
  EXPECT_NE(g.grad_fn(), nullptr);
  EXPECT_TRUE(GradMode::is_enabled());
  // The saved output of exp is given back with exp's node as its grad_fn: the third derivative
  // of exp(x) x is (x + 3) exp(x).
  Tensor g2 = autograd::grad({sum(g)}, {x}, {}, std::nullopt, true)[0];
  Tensor g3 = autograd::grad({sum(g2)}, {x})[0];
  const Tensor v = wig({3}, 0.0);
  EXPECT_TRUE(testing::all_close(g3, (v + 3.0) * exp(v), 1e-12, 1e-12));
}

TEST(DoubleBackward, SavedOutputsMakeNoReferenceCycle) {
  // exp and softmax keep their outputs; under create_graph those come back with the node as
  // grad_fn, built on demand from a weak reference: once the tensors go, every node goes.
  std::weak_ptr<autograd::Node> exp_node, softmax_node, second_node;
  {
    Tensor x = leaf({2, 3}, 0.0);
    Tensor e = exp(x);
    Tensor s = softmax(e, 1);
    exp_node = e.grad_fn();
    softmax_node = s.grad_fn();
    Tensor g = autograd::grad({sum(s * s)}, {x}, {}, std::nullopt, true)[0];
    second_node = g.grad_fn();
    Tensor h = autograd::grad({sum(g)}, {x})[0];
    EXPECT_TRUE(h.defined());
    EXPECT_FALSE(second_node.expired());
  }
  EXPECT_TRUE(exp_node.expired());
  EXPECT_TRUE(softmax_node.expired());
  EXPECT_TRUE(second_node.expired());
}

TEST(DoubleBackward, UnsupportedOpRaisesAtTheSecondBackward) {
  // max_pool2d's backward is a hand-written kernel: its gradient is not differentiable yet.
  Tensor x = leaf({1, 1, 2, 2}, 0.0, 0.5, 1.0);
  Tensor g = autograd::grad({sum(square(max_pool2d(x, 2)))}, {x}, {}, std::nullopt, true)[0];
  ASSERT_TRUE(g.requires_grad());  // the first gradient itself is right: 2 max at the max ...
  const std::vector<double> v = to_vector<double>(x);
  const auto largest = std::max_element(v.begin(), v.end());
  std::vector<double> expected(4, 0.0);
  expected[static_cast<size_t>(largest - v.begin())] = 2 * *largest;
  EXPECT_TRUE(testing::all_close(g, tensor(expected, {1, 1, 2, 2}), 1e-12, 1e-12));
  // ... but differentiating it raises a clear error, never a silently wrong zero.
  EXPECT_ERROR_CONTAINS(autograd::grad({sum(g)}, {x}),
                        "double backward of MaxPool2dBackward is not supported");
  EXPECT_ERROR_CONTAINS(
      gradgradcheck([](const std::vector<Tensor>& t) { return max_pool2d(t[0], 2); }, {x}),
      "double backward of MaxPool2dBackward is not supported");
  // layer_norm too, through a plain backward of the gradient.
  Tensor y = leaf({2, 3}, 1.0);
  Tensor gs = autograd::grad({sum(square(layer_norm(y, {3})))}, {y}, {}, std::nullopt, true)[0];
  EXPECT_ERROR_CONTAINS(sum(gs * gs).backward(),
                        "double backward of LayerNormBackward is not supported");
}

TEST(DoubleBackward, UnsupportedOpDoesNotStopAFirstOrderUse) {
  // create_graph over a graph with an unsupported op still gives the right first gradients; only
  // differentiating them through that op raises.
  Tensor x = leaf({1, 1, 2, 2}, 0.0);
  Tensor w = leaf({3}, 1.0);
  std::vector<Tensor> g =
      autograd::grad({sum(avg_pool2d(x, 2)) * sum(exp(w))}, {x, w}, {}, std::nullopt, true);
  const double average = mean(wig({4}, 0.0)).item<double>();
  EXPECT_TRUE(testing::all_close(g[1], average * exp(wig({3}, 1.0)), 1e-12, 1e-12));
  Tensor h = autograd::grad({sum(g[1])}, {w})[0];
  EXPECT_TRUE(testing::all_close(h, average * exp(wig({3}, 1.0)), 1e-12, 1e-12));
  EXPECT_ERROR_CONTAINS(autograd::grad({sum(g[0])}, {x}),
                        "double backward of AvgPool2dBackward is not supported");
}

}  // namespace
}  // namespace minidl
