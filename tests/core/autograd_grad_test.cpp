// autograd::grad (torch.autograd.grad): values against PyTorch (tests/core/
// autograd_grad_reference.h, written by tools/reference/make_autograd_reference.py), that no leaf's
// .grad changes, that only the part of the graph leading to the inputs runs, retain_graph, non-leaf
// and unused inputs, and the errors a user can trigger.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/autograd_grad_reference.h"
#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace ref = autograd_reference;

Tensor leaf(std::initializer_list<double> values) {
  return tensor(values, kFloat64).requires_grad_(true);
}

Tensor leaf(const std::vector<double>& values, const Shape& sizes) {
  return tensor(values, sizes).requires_grad_(true);
}

TEST(AutogradGrad, TwoOutputsLeafAndNonLeafInputsMatchPyTorch) {
  Tensor x = leaf({0.5, -1.2, 2.0});
  Tensor w = leaf({1.5, 0.3, -0.7});
  Tensor h = x * w;
  Tensor y1 = sum(tanh(h) * h);
  Tensor y2 = exp(h) * x;
  // y1 is a scalar: its undefined grad_output is ones. h is a non-leaf: its gradient is the
  // one flowing into it from both outputs; x's adds the path that skips h (y2 = ... * x).
  std::vector<Tensor> grads =
      autograd::grad({y1, y2}, {x, h, w}, {Tensor(), tensor({0.2, -1.0, 0.7}, kFloat64)});
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_TRUE(testing::all_close(grads[0], tensor(ref::kTwoOutputsGradX, {3}), 1e-12, 1e-12));
  EXPECT_TRUE(testing::all_close(grads[1], tensor(ref::kTwoOutputsGradH, {3}), 1e-12, 1e-12));
  EXPECT_TRUE(testing::all_close(grads[2], tensor(ref::kTwoOutputsGradW, {3}), 1e-12, 1e-12));
  EXPECT_FALSE(grads[0].requires_grad());  // no create_graph: plain tensors
}

TEST(AutogradGrad, MlpInputAndWeightGradientsMatchPyTorch) {
  Tensor x = leaf({0.3, -0.8, 1.1, -0.4, 0.9, 0.25}, {2, 3});
  Tensor w1 = leaf({0.2, -0.5, 0.7, 0.6, 0.1, -0.3, -0.9, 0.4, 0.05, 0.35, -0.15, 0.8}, {4, 3});
  Tensor b1 = leaf({0.1, -0.2, 0.3, 0.0});
  Tensor w2 = leaf({0.5, -0.6, 0.25, 0.9, -0.3, 0.8, -0.45, 0.1}, {2, 4});
  Tensor b2 = leaf({0.05, -0.1});
  Tensor loss = sum(sigmoid(linear(tanh(linear(x, w1, b1)), w2, b2)));
  std::vector<Tensor> grads = autograd::grad({loss}, {x, w1});
  EXPECT_TRUE(testing::all_close(grads[0], tensor(ref::kMlpGradX, {2, 3}), 1e-12, 1e-12));
  EXPECT_TRUE(testing::all_close(grads[1], tensor(ref::kMlpGradW1, {4, 3}), 1e-12, 1e-12));
  // The same numbers as backward() would accumulate, and no leaf's .grad was touched.
  for (const Tensor& t : {x, w1, b1, w2, b2}) EXPECT_FALSE(t.grad().defined());
  loss = sum(sigmoid(linear(tanh(linear(x, w1, b1)), w2, b2)));
  loss.backward();
  EXPECT_TRUE(testing::all_close(x.grad(), grads[0], 0, 0));
  EXPECT_TRUE(testing::all_close(w1.grad(), grads[1], 0, 0));
}

TEST(AutogradGrad, LeavesKeepTheirGrad) {
  Tensor x = leaf({1.0, 2.0});
  Tensor w = leaf({3.0, 4.0});
  x.set_grad(tensor({10.0, 20.0}, kFloat64));
  Tensor y = sum(x * w);
  std::vector<Tensor> grads = autograd::grad({y}, {x}, {}, /*retain_graph=*/true);
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{3.0, 4.0}));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{10.0, 20.0}));
  EXPECT_FALSE(w.grad().defined());  // not an input, and not accumulated either
  grads = autograd::grad({y}, {w, x});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{10.0, 20.0}));
  EXPECT_FALSE(w.grad().defined());
}

TEST(AutogradGrad, RunsOnlyThePartOfTheGraphLeadingToTheInputs) {
  Tensor x = leaf({2.0});
  Tensor a = leaf({5.0});
  Tensor b = leaf({7.0});
  Tensor needed = x * 3.0;
  Tensor other = a * b;
  int needed_runs = 0;
  int other_runs = 0;
  needed.register_hook([&](const Tensor&) { ++needed_runs; });
  other.register_hook([&](const Tensor&) { ++other_runs; });
  Tensor y = needed + other;
  std::vector<Tensor> grads = autograd::grad({y}, {x});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{3.0}));
  EXPECT_EQ(needed_runs, 1);
  EXPECT_EQ(other_runs, 0);
  EXPECT_FALSE(a.grad().defined());
}

TEST(AutogradGrad, NonLeafInputStopsThere) {
  // The graph below h (h = x * x) does not run when only h's gradient is asked for.
  Tensor x = leaf({3.0});
  Tensor h = x * x;
  int below_runs = 0;
  Tensor below = x * 1.0;
  below.register_hook([&](const Tensor&) { ++below_runs; });
  Tensor y = h * h + below;
  std::vector<Tensor> grads = autograd::grad({y}, {h});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{18.0}));  // 2h
  EXPECT_EQ(below_runs, 0);
}

TEST(AutogradGrad, InputBelowAnotherInputGetsEveryPath) {
  // y = h^2 + x with h = 2x: dy/dh = 2h = 4x, dy/dx = 8x + 1.
  Tensor x = leaf({1.5});
  Tensor h = x * 2.0;
  Tensor y = h * h + x;
  std::vector<Tensor> grads = autograd::grad({y}, {h, x, x});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{6.0}));
  EXPECT_EQ(to_vector<double>(grads[1]), (std::vector<double>{13.0}));
  EXPECT_EQ(to_vector<double>(grads[2]), (std::vector<double>{13.0}));
}

TEST(AutogradGrad, OutputThatIsTheInput) {
  Tensor x = leaf({1.0, 2.0, 3.0});
  std::vector<Tensor> grads = autograd::grad({x}, {x}, {tensor({4.0, 5.0, 6.0}, kFloat64)});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{4.0, 5.0, 6.0}));
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradGrad, SameOutputTwiceAddsItsGradients) {
  Tensor x = leaf({2.0});
  Tensor y = x * x;
  std::vector<Tensor> grads =
      autograd::grad({y, y}, {x}, {tensor({1.0}, kFloat64), tensor({0.5}, kFloat64)});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{6.0}));  // 1.5 * 2x
}

TEST(AutogradGrad, InputHooksAsPyTorch) {
  // PyTorch 2.15: a leaf's and a non-leaf's hook change the gradient returned for them; a
  // non-leaf whose gradient also flows on to another input is returned before its hook, which
  // still changes what flows on: grad(y, [h, x]) = ([6, 12], [180, 360]) below.
  Tensor x = leaf({1.0, 2.0});
  x.register_hook([](const Tensor& g) { return g * 10.0; });
  EXPECT_EQ(to_vector<double>(autograd::grad({sum(x * x)}, {x})[0]),
            (std::vector<double>{20.0, 40.0}));
  EXPECT_FALSE(x.grad().defined());

  Tensor z = leaf({1.0, 2.0});
  Tensor h = z * 3.0;
  h.register_hook([](const Tensor& g) { return g * 10.0; });
  Tensor y = sum(h * h);
  EXPECT_EQ(to_vector<double>(autograd::grad({y}, {h}, {}, true)[0]),
            (std::vector<double>{60.0, 120.0}));
  std::vector<Tensor> grads = autograd::grad({y}, {h, z});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{6.0, 12.0}));
  EXPECT_EQ(to_vector<double>(grads[1]), (std::vector<double>{180.0, 360.0}));
}

TEST(AutogradGrad, RetainGraphDefaultsToFreeingTheGraph) {
  Tensor x = leaf({2.0});
  Tensor y = x * x * x;
  std::vector<Tensor> first = autograd::grad({y}, {x}, {}, /*retain_graph=*/true);
  std::vector<Tensor> second = autograd::grad({y}, {x});  // retain_graph = create_graph = false
  EXPECT_EQ(to_vector<double>(first[0]), (std::vector<double>{12.0}));
  EXPECT_EQ(to_vector<double>(second[0]), (std::vector<double>{12.0}));
  EXPECT_ERROR_CONTAINS(autograd::grad({y}, {x}), "backward through the graph a second time");
  EXPECT_ERROR_CONTAINS(y.backward(), "backward through the graph a second time");
}

TEST(AutogradGrad, UnusedInputIsAnErrorUnlessAllowed) {
  Tensor x = leaf({2.0});
  Tensor unused = leaf({1.0});
  Tensor y = x * x;
  EXPECT_ERROR_CONTAINS(autograd::grad({y}, {x, unused}, {}, true),
                        "input 1 of shape [1] was not used in the graph");
  std::vector<Tensor> grads =
      autograd::grad({y}, {x, unused}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{4.0}));
  EXPECT_FALSE(grads[1].defined());
  // An input that comes before the output in the graph is not reached either.
  Tensor z = leaf({1.0});
  Tensor later = z * y.detach();
  grads = autograd::grad({z * 2.0}, {later}, {}, std::nullopt, false, true);
  EXPECT_FALSE(grads[0].defined());
}

TEST(AutogradGrad, Errors) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * x;
  EXPECT_ERROR_CONTAINS(autograd::grad({y}, {x}),
                        "a gradient can be created implicitly only for one-element outputs");
  EXPECT_ERROR_CONTAINS(autograd::grad({y}, {x}, {ones({3}, kFloat64)}),
                        "autograd::grad: expected a gradient of shape [2], dtype float64");
  EXPECT_ERROR_CONTAINS(autograd::grad({y}, {x}, {ones({2}, kFloat64), ones({2}, kFloat64)}),
                        "expected one grad_output per output (1), got 2");
  Tensor constant = tensor({1.0, 2.0}, kFloat64);
  EXPECT_ERROR_CONTAINS(autograd::grad({constant.sum()}, {x}),
                        "output 0 of shape [] does not require grad");
  EXPECT_ERROR_CONTAINS(autograd::grad({y.sum()}, {constant}),
                        "input 0 of shape [2] does not require grad");
  EXPECT_ERROR_CONTAINS(autograd::grad({}, {x}), "expected at least one output");
  EXPECT_ERROR_CONTAINS(autograd::grad({y.sum()}, {}), "expected at least one input");
}

TEST(AutogradGrad, GradcheckAgreesWithGradOfASecondInput) {
  // autograd::grad's numbers are the ones gradcheck's central differences expect.
  Tensor x = leaf({0.3, -0.7, 1.2});
  Tensor w = leaf({1.1, 0.4, -0.2});
  const auto fn = [](const std::vector<Tensor>& in) { return tanh(in[0] * in[1]) * in[1]; };
  ASSERT_TRUE(gradcheck(fn, {x, w}));
  std::vector<Tensor> grads = autograd::grad({sum(fn({x, w}))}, {w});
  // d/dw sum(tanh(xw) w) = x w (1 - tanh^2(xw)) + tanh(xw)
  std::vector<double> xs = to_vector<double>(x), ws = to_vector<double>(w);
  std::vector<double> got = to_vector<double>(grads[0]);
  for (size_t i = 0; i < 3; ++i) {
    const double t = std::tanh(xs[i] * ws[i]);
    EXPECT_NEAR(got[i], xs[i] * ws[i] * (1 - t * t) + t, 1e-14);
  }
}

TEST(AutogradGrad, DeepChainRunsWithoutRecursion) {
  Tensor x = leaf({0.0});
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = y + 1.0;
  std::vector<Tensor> grads = autograd::grad({y}, {x});
  EXPECT_EQ(to_vector<double>(grads[0]), (std::vector<double>{1.0}));
}

}  // namespace
}  // namespace minidl
