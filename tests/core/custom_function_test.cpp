// autograd::Function<T> and AutogradContext (LibTorch's custom autograd functions): saved
// tensors and their version check, saved_data, non-tensor and optional arguments,
// needs_input_grad, mark_dirty, mark_non_differentiable, that forward runs without recording,
// the errors a wrong backward or a wrong mark gets, and custom ops checked by gradcheck.
#include "minidl/core/autograd/custom_function.h"

#include <gtest/gtest.h>

#include <any>
#include <optional>
#include <string>
#include <vector>

#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/closeness.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

Tensor leaf(std::initializer_list<double> values) {
  return tensor(values, kFloat64).requires_grad_(true);
}

// softplus(x) = log(1 + exp(beta x)) / beta, with a hand-written backward:
// d/dx = sigmoid(beta x). The output is saved too (to check saving an output works).
struct Softplus : autograd::Function<Softplus> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double beta) {
    EXPECT_FALSE(GradMode::is_enabled());  // forward is not recorded
    Tensor out = log1p(exp(x * beta)) / beta;
    ctx->save_for_backward({x, out});
    ctx->saved_data["beta"] = beta;
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const double beta = std::any_cast<double>(ctx->saved_data.at("beta"));
    return {grad_outputs[0] * sigmoid(saved[0] * beta), Tensor()};
  }
};

TEST(CustomFunction, ForwardBackwardAndGradcheck) {
  Tensor x = leaf({-1.5, 0.2, 2.0});
  Tensor y = Softplus::apply(x, 2.0);
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "SoftplusBackward");
  const std::vector<double> xs{-1.5, 0.2, 2.0};
  std::vector<double> values = to_vector<double>(y);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(values[i], std::log1p(std::exp(2 * xs[i])) / 2, 1e-15);
  sum(y).backward();
  std::vector<double> grads = to_vector<double>(x.grad());
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(grads[i], 1 / (1 + std::exp(-2 * xs[i])), 1e-15);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return Softplus::apply(in[0], 0.7); },
                        {leaf({-2.0, -0.3, 0.0, 0.4, 3.0})}));
}

TEST(CustomFunction, WithoutGradModeOrGradRecordsNothing) {
  Tensor plain = tensor({1.0, 2.0}, kFloat64);
  EXPECT_FALSE(Softplus::apply(plain, 1.0).requires_grad());
  Tensor x = leaf({1.0, 2.0});
  NoGradGuard no_grad;
  Tensor y = Softplus::apply(x, 1.0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

// a * b + c (c optional), computing only the gradients asked for; `computed` counts them.
struct MulAdd : autograd::Function<MulAdd> {
  static inline std::vector<std::string> computed;
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b,
                        const std::optional<Tensor>& c) {
    ctx->save_for_backward({a, b});
    return c.has_value() ? a * b + *c : a * b;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor& grad = grad_outputs[0];
    variable_list grads(3);
    if (ctx->needs_input_grad(0)) {
      computed.push_back("a");
      grads[0] = grad * saved[1];
    }
    if (ctx->needs_input_grad(1)) {
      computed.push_back("b");
      grads[1] = grad * saved[0];
    }
    if (ctx->needs_input_grad(2)) {
      computed.push_back("c");
      grads[2] = grad;
    }
    return grads;
  }
};

TEST(CustomFunction, NeedsInputGradAndOptionalTensorArguments) {
  Tensor a = leaf({2.0, 3.0});
  Tensor b = tensor({5.0, 7.0}, kFloat64);  // needs no gradient
  Tensor c = leaf({1.0, 1.0});
  MulAdd::computed.clear();
  sum(MulAdd::apply(a, b, std::optional<Tensor>(c))).backward();
  EXPECT_EQ(MulAdd::computed, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(to_vector<double>(a.grad()), (std::vector<double>{5.0, 7.0}));
  EXPECT_EQ(to_vector<double>(c.grad()), (std::vector<double>{1.0, 1.0}));

  MulAdd::computed.clear();
  Tensor b2 = leaf({5.0, 7.0});
  std::vector<Tensor> grads =
      autograd::grad({sum(MulAdd::apply(a, b2, std::optional<Tensor>()))}, {b2});
  EXPECT_EQ(MulAdd::computed, (std::vector<std::string>{"a", "b"}));  // both require grad
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{2.0, 3.0}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return MulAdd::apply(in[0], in[1], in[2]); },
                {leaf({0.5, -1.0}), leaf({2.0, 0.25}), leaf({3.0, -4.0})}));
}

TEST(CustomFunction, NeedsInputGradOutOfRangeIsAnError) {
  AutogradContext ctx;
  ctx.set_needs_input_grad({true});
  EXPECT_ERROR_CONTAINS(ctx.needs_input_grad(1), "needs_input_grad(1) is out of range");
}

TEST(CustomFunction, SavedTensorChangedInPlaceIsAnError) {
  Tensor x = leaf({1.0, 2.0});
  Tensor h = x * 1.0;
  Tensor b = tensor({3.0, 4.0}, kFloat64);
  Tensor y = MulAdd::apply(h, b, std::optional<Tensor>());
  b.mul_(2.0);  // saved for backward
  EXPECT_ERROR_CONTAINS(sum(y).backward(), "was modified by an in-place operation");
}

// x += 1 in place, declared with mark_dirty.
struct AddOneInPlace : autograd::Function<AddOneInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(1.0);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list grad_outputs) {
    return {grad_outputs[0] * 1.0};
  }
};

TEST(CustomFunction, MarkDirtyTakesTheOpIntoTheInputsHistory) {
  Tensor x = leaf({1.0, 2.0});
  Tensor h = x * 3.0;
  Tensor y = AddOneInPlace::apply(h);
  EXPECT_TRUE(y.is_same(h));  // the input itself, changed
  EXPECT_EQ(to_vector<double>(h), (std::vector<double>{4.0, 7.0}));
  ASSERT_NE(h.grad_fn(), nullptr);
  EXPECT_EQ(h.grad_fn()->name(), "AddOneInPlaceBackward");
  sum(h * h).backward();  // d/dx (3x + 1)^2 = 6 (3x + 1)
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{24.0, 42.0}));
}

TEST(CustomFunction, MarkDirtyOnALeafThatRequiresGradIsAnError) {
  Tensor x = leaf({1.0, 2.0});
  EXPECT_ERROR_CONTAINS(AddOneInPlace::apply(x), "that requires grad was changed in place");
}

struct DirtyButNotReturned : autograd::Function<DirtyButNotReturned> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(1.0);
    ctx->mark_dirty({x});
    return x * 2.0;
  }
  static variable_list backward(AutogradContext*, variable_list grad_outputs) {
    return {grad_outputs[0] * 2.0};
  }
};

TEST(CustomFunction, DirtyTensorMustBeReturned) {
  Tensor x = leaf({1.0});
  EXPECT_ERROR_CONTAINS(DirtyButNotReturned::apply(x * 1.0), "must be returned by forward");
}

// Returns its input as it is: the output is a new alias, and the input's history is untouched.
struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
  static variable_list backward(AutogradContext*, variable_list grad_outputs) {
    return {grad_outputs[0] * 2.0};  // not the true gradient: shows that this node runs
  }
};

TEST(CustomFunction, ReturningAnInputGivesANewAlias) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = Identity::apply(x);
  EXPECT_FALSE(y.is_same(x));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  sum(y).backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{2.0, 2.0}));
}

// sign(x), not differentiable.
struct Sign : autograd::Function<Sign> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor out = (x > 0.0).to(x.dtype()) - (x < 0.0).to(x.dtype());
    ctx->mark_non_differentiable({out});
    return out;
  }
  static variable_list backward(AutogradContext*, variable_list) { return {Tensor()}; }
};

TEST(CustomFunction, MarkNonDifferentiable) {
  Tensor x = leaf({-2.0, 0.0, 3.0});
  Tensor s = Sign::apply(x);
  EXPECT_FALSE(s.requires_grad());
  EXPECT_EQ(s.grad_fn(), nullptr);
  EXPECT_EQ(to_vector<double>(s), (std::vector<double>{-1.0, 0.0, 1.0}));
}

// sin(x) and cos(x) as two outputs of one function: backward gets both outputs' gradients.
// `materialize` false asks for undefined gradients where none arrived; `seen` records, per
// call of backward, which gradients were defined and which were all zeros.
struct SinCos : autograd::Function<SinCos> {
  static inline std::vector<std::string> seen;

  static variable_list forward(AutogradContext* ctx, const Tensor& x, bool materialize) {
    ctx->save_for_backward({x});
    ctx->set_materialize_grads(materialize);
    return {sin(x), cos(x)};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    std::string pattern;
    for (const Tensor& grad : grad_outputs)
      pattern += !grad.defined() ? 'u' : (grad == 0.0).all().item<bool>() ? '0' : 'g';
    seen.push_back(pattern);
    const Tensor x = ctx->get_saved_variables()[0];
    Tensor grad;
    if (grad_outputs[0].defined()) grad = grad_outputs[0] * cos(x);
    if (grad_outputs[1].defined())
      grad = grad.defined() ? grad - grad_outputs[1] * sin(x) : -grad_outputs[1] * sin(x);
    return {grad, Tensor()};
  }
};

TEST(CustomFunction, SeveralOutputsAreOneNodeCheckedByGradcheck) {
  Tensor x = leaf({-1.5, 0.2, 2.0});
  variable_list outputs = SinCos::apply(x, true);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].grad_fn(), outputs[1].grad_fn());
  EXPECT_EQ(outputs[0].grad_fn()->name(), "SinCosBackward");
  EXPECT_EQ(outputs[1].unsafe_impl()->autograd_meta().output_nr, 1u);
  EXPECT_TRUE(allclose(outputs[1], cos(x.detach())));
  auto result = gradcheck(
      [](const std::vector<Tensor>& in) {
        variable_list out = SinCos::apply(in[0], true);
        return out[0] * 2.0 + out[1] * out[1] * in[0];
      },
      {x});
  EXPECT_TRUE(result) << result.message;
}

TEST(CustomFunction, AnOutputNoGradientReachedGetsZerosUnlessNotMaterialized) {
  Tensor x = leaf({0.5, 1.0});
  SinCos::seen.clear();
  sum(SinCos::apply(x, true)[1]).backward();
  sum(SinCos::apply(x, false)[1]).backward();
  // Two statements: the operands of one * may be evaluated in either order (GCC and clang
  // differ), and the engine runs the later node first.
  const Tensor sine = SinCos::apply(x, false)[0];
  const Tensor cosine = SinCos::apply(x, false)[1];
  sum(sine * cosine).backward();
  EXPECT_EQ(SinCos::seen, (std::vector<std::string>{"0g", "ug", "ug", "gu"}));
  // Each backward: d/dx cos = -sin, twice, then d/dx (sin x cos x) = cos^2 - sin^2.
  const Tensor xd = x.detach();
  EXPECT_TRUE(allclose(x.grad(), -2.0 * sin(xd) + cos(xd) * cos(xd) - sin(xd) * sin(xd)));
}

// The largest element and its index: the index is not differentiable.
struct MaxWithIndex : autograd::Function<MaxWithIndex> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    Tensor index = argmax(x);
    ctx->mark_non_differentiable({index});
    ctx->saved_data["index"] = index.item<int64_t>();
    ctx->saved_data["size"] = x.numel();
    return {x.max(), index};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    EXPECT_EQ(grad_outputs.size(), 2u);
    EXPECT_TRUE(grad_outputs[1].defined());  // a materialized zero for the index
    Tensor grad = zeros({std::any_cast<int64_t>(ctx->saved_data.at("size"))}, kFloat64);
    grad.narrow(0, std::any_cast<int64_t>(ctx->saved_data.at("index")), 1)
        .copy_(grad_outputs[0].reshape({1}));
    return {grad};
  }
};

TEST(CustomFunction, NonDifferentiableOutputAmongSeveral) {
  Tensor x = leaf({1.0, 4.0, 2.0});
  variable_list outputs = MaxWithIndex::apply(x);
  EXPECT_TRUE(outputs[0].requires_grad());
  EXPECT_FALSE(outputs[1].requires_grad());
  EXPECT_EQ(outputs[1].grad_fn(), nullptr);
  EXPECT_EQ(outputs[1].item<int64_t>(), 1);
  (outputs[0] * 3.0).backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0.0, 3.0, 0.0}));
}

// Returns its input, marked non-differentiable, beside its double.
struct InputAndDouble : autograd::Function<InputAndDouble> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    ctx->mark_non_differentiable({x});
    return {x, x * 2.0};
  }
  static variable_list backward(AutogradContext*, variable_list grad_outputs) {
    return {grad_outputs[1] * 2.0};
  }
};

TEST(CustomFunction, AnInputReturnedAndMarkedNonDifferentiableStaysSo) {
  Tensor x = leaf({1.0, 2.0});
  variable_list outputs = InputAndDouble::apply(x);
  EXPECT_FALSE(outputs[0].is_same(x));
  EXPECT_FALSE(outputs[0].requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(outputs[1].requires_grad());
  sum(outputs[1]).backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{2.0, 2.0}));
}

// Returns one tensor twice: two outputs, each with a gradient of its own.
struct Twice : autograd::Function<Twice> {
  static variable_list forward(AutogradContext*, const Tensor& x) {
    Tensor y = x * 1.0;
    return {y, y};
  }
  static variable_list backward(AutogradContext*, variable_list grad_outputs) {
    return {grad_outputs[0] + grad_outputs[1] * 10.0};
  }
};

TEST(CustomFunction, TheSameTensorReturnedTwiceIsTwoOutputs) {
  Tensor x = leaf({1.0, 2.0});
  variable_list outputs = Twice::apply(x);
  EXPECT_FALSE(outputs[0].is_same(outputs[1]));
  EXPECT_EQ(outputs[0].unsafe_impl()->autograd_meta().output_nr, 0u);
  EXPECT_EQ(outputs[1].unsafe_impl()->autograd_meta().output_nr, 1u);
  sum(outputs[0] * 2.0 + outputs[1]).backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{12.0, 12.0}));
}

// Backward functions that break the rules, chosen by `mistake`.
struct Broken : autograd::Function<Broken> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, int mistake) {
    ctx->saved_data["mistake"] = mistake;
    return x * 1.0;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const Tensor& grad = grad_outputs[0];
    switch (std::any_cast<int>(ctx->saved_data.at("mistake"))) {
      case 0: return {grad};                           // one gradient for two arguments
      case 1: return {grad, grad};                     // a gradient for the int
      case 2: return {ones({5}, kFloat64), Tensor()};  // wrong shape
      case 3: return {grad.to(kFloat32), Tensor()};    // wrong dtype
      default: return {grad, Tensor(), Tensor()};      // an undefined extra is allowed
    }
  }
};

TEST(CustomFunction, BackwardMistakesAreErrors) {
  Tensor x = leaf({1.0, 2.0});
  EXPECT_ERROR_CONTAINS(sum(Broken::apply(x, 0)).backward(),
                        "returned an incorrect number of gradients (expected 2, got 1)");
  EXPECT_ERROR_CONTAINS(sum(Broken::apply(x, 1)).backward(),
                        "returned a defined gradient at position 1, but that forward argument "
                        "is not a tensor");
  EXPECT_ERROR_CONTAINS(sum(Broken::apply(x, 2)).backward(),
                        "the gradient at position 0 should have its input's shape [2]");
  EXPECT_ERROR_CONTAINS(sum(Broken::apply(x, 3)).backward(), "dtype float64");
  sum(Broken::apply(x, 4)).backward();
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{1.0, 1.0}));
}

TEST(CustomFunction, ContextMisuseIsAnError) {
  struct SavesInBackward : autograd::Function<SavesInBackward> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
      ctx->save_for_backward(grad_outputs);
      return {grad_outputs[0] * 2.0};
    }
  };
  EXPECT_ERROR_CONTAINS(sum(SavesInBackward::apply(leaf({1.0}))).backward(),
                        "save_for_backward may only be called in forward");
}

// A small custom layer, y = tanh(x w^T + b), with its own backward; checked by gradcheck in
// all three inputs and against the same layer built from minidl's ops.
struct TanhLinear : autograd::Function<TanhLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
    Tensor out = tanh(linear(x, w, b));
    ctx->save_for_backward({x, w, out});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];
    const Tensor& w = saved[1];
    const Tensor& out = saved[2];
    const Tensor pre = grad_outputs[0] * (1.0 - out * out);  // through tanh
    return {matmul(pre, w), matmul(pre.t(), x), sum(pre, Shape{0})};
  }
};

TEST(CustomFunction, CustomLayerGradcheckAndAgreementWithBuiltInOps) {
  Tensor x = testing::wiggly({3, 4}, 0.0, kFloat64).requires_grad_(true);
  Tensor w = testing::wiggly({2, 4}, 1.0, kFloat64).requires_grad_(true);
  Tensor b = testing::wiggly({2}, 2.0, kFloat64).requires_grad_(true);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return TanhLinear::apply(in[0], in[1], in[2]); },
      {x, w, b}));
  const Tensor weights = testing::wiggly({3, 2}, 3.0, kFloat64);
  std::vector<Tensor> custom =
      autograd::grad({sum(TanhLinear::apply(x, w, b) * weights)}, {x, w, b});
  std::vector<Tensor> built_in = autograd::grad({sum(tanh(linear(x, w, b)) * weights)}, {x, w, b});
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(testing::all_close(custom[i], built_in[i], 1e-14, 1e-12)) << "input " << i;
}

}  // namespace
}  // namespace minidl
