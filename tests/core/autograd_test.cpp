// The autograd engine, driven by element-wise ops: graphs with shared sub-graphs, gradient
// accumulation, retain_graph, NoGradGuard, detach, post-accumulate-grad hooks, the saved-tensor
// version check, and the errors a user can trigger. Gradients are worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/node.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

Tensor leaf(std::initializer_list<double> values) {
  return tensor(values, kFloat64).requires_grad_(true);
}

std::vector<double> grad_of(const Tensor& t) { return to_vector<double>(t.grad()); }

TEST(Autograd, LeafAndNonLeaf) {
  Tensor x = leaf({2.0});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  Tensor y = x * 3.0;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward");
  EXPECT_FALSE(x.grad().defined());  // until a backward reaches it
}

TEST(Autograd, SharedSubGraphSumsEveryPath) {
  // y = x*x + x: x feeds three edges; dy/dx = 2x + 1.
  Tensor x = leaf({3.0});
  Tensor y = x * x + x;
  y.backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{7.0}));
  // A diamond: e = exp(x) feeds both branches; z = e*e + 2e, dz/dx = (2e + 2) * e.
  Tensor w = leaf({0.5});
  Tensor e = exp(w);
  Tensor z = e * e + e * 2.0;
  z.backward();
  const double ev = std::exp(0.5);
  EXPECT_NEAR(grad_of(w)[0], (2 * ev + 2) * ev, 1e-12);
}

TEST(Autograd, ExplicitGradientForANonScalarOutput) {
  Tensor x = leaf({1.0, 2.0, 3.0});
  Tensor y = x * x;
  y.backward(tensor({1.0, 10.0, 100.0}, kFloat64));
  EXPECT_EQ(grad_of(x), (std::vector<double>{2.0, 40.0, 600.0}));
}

TEST(Autograd, GradientsAccumulateOverBackwards) {
  Tensor x = leaf({1.0, -2.0});
  (x * 3.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(grad_of(x), (std::vector<double>{3.0, 3.0}));
  (x * x).backward(ones({2}, kFloat64));
  EXPECT_EQ(grad_of(x), (std::vector<double>{5.0, -1.0}));
  x.set_grad(Tensor());  // what zero_grad does
  (x * 2.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(grad_of(x), (std::vector<double>{2.0, 2.0}));
}

TEST(Autograd, RetainGraphAllowsASecondBackward) {
  Tensor x = leaf({2.0});
  Tensor y = exp(x) * x;  // dy/dx = e^x (1 + x)
  y.backward(Tensor(), /*retain_graph=*/true);
  const double once = std::exp(2.0) * 3.0;
  EXPECT_NEAR(grad_of(x)[0], once, 1e-12);
  y.backward();  // allowed, and frees the graph
  EXPECT_NEAR(grad_of(x)[0], 2 * once, 1e-12);
  EXPECT_ERROR_CONTAINS(y.backward(), "backward through the graph a second time");
}

TEST(Autograd, SecondBackwardWithoutRetainGraphIsAnError) {
  Tensor x = leaf({2.0});
  Tensor y = sigmoid(x);
  y.backward();
  EXPECT_ERROR_CONTAINS(y.backward(), "backward through the graph a second time");
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = leaf({1.0, 2.0});
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = exp(x) * x + 1.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    { NoGradGuard nested; }
    EXPECT_FALSE(GradMode::is_enabled());  // the inner guard restores the outer state
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, DetachCutsTheGraphAndSharesStorage) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 3.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.storage().get(), y.storage().get());
  // Only the path through y carries a gradient; d is a constant.
  Tensor z = y * d;  // dz/dx = 3 * d
  z.backward(ones({2}, kFloat64));
  EXPECT_EQ(grad_of(x), (std::vector<double>{9.0, 18.0}));
  EXPECT_EQ(to_vector<double>(d), (std::vector<double>{3.0, 6.0}));
}

TEST(Autograd, PostAccumulateGradHookFiresOncePerBackwardWithTheFinalGradient) {
  Tensor x = leaf({2.0});
  std::vector<double> seen;
  const int handle = x.register_post_accumulate_grad_hook(
      [&seen](const Tensor& t) { seen.push_back(to_vector<double>(t.grad())[0]); });
  // x reaches the loss along three edges; the hook sees the sum, once.
  Tensor y = x * x + x;  // dy/dx = 2x + 1 = 5
  y.backward(Tensor(), /*retain_graph=*/true);
  EXPECT_EQ(seen, (std::vector<double>{5.0}));
  y.backward();  // accumulates: the hook sees 10
  EXPECT_EQ(seen, (std::vector<double>{5.0, 10.0}));
  x.remove_post_accumulate_grad_hook(handle);
  (x * 1.0).backward();
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_ERROR_CONTAINS((x * 1.0).register_post_accumulate_grad_hook([](const Tensor&) {}),
                        "register_post_accumulate_grad_hook: expected a leaf tensor");
}

TEST(Autograd, InPlaceChangeOfASavedTensorIsCaught) {
  Tensor x = leaf({0.5, 1.0});
  Tensor y = exp(x);  // exp saves its output for backward
  {
    NoGradGuard no_grad;
    y.add_(1.0);
  }
  EXPECT_ERROR_CONTAINS(y.backward(ones({2}, kFloat64)),
                        "exp backward: a tensor of shape [2] saved for the gradient was modified "
                        "by an in-place operation");
  // The same through a view of a saved input.
  Tensor a = leaf({2.0, 3.0});
  Tensor b = tensor({4.0, 5.0}, kFloat64);
  Tensor c = mul(a, b);  // saves b for a's gradient
  {
    NoGradGuard no_grad;
    b.select(0, 1).mul_(2.0);
  }
  EXPECT_ERROR_CONTAINS(c.backward(ones({2}, kFloat64)), "mul backward: a tensor of shape [2]");
}

TEST(Autograd, InPlaceOnATensorThatRequiresGradIsRefusedInGradMode) {
  Tensor x = leaf({1.0});
  EXPECT_ERROR_CONTAINS(x.add_(1.0),
                        "add_: in-place operation on a tensor of shape [1] that requires grad");
  Tensor y = x * 2.0;
  EXPECT_ERROR_CONTAINS(y.mul_(2.0),
                        "mul_: in-place operation on a tensor of shape [1] that requires grad");
}

TEST(Autograd, BackwardErrors) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2.0;
  EXPECT_ERROR_CONTAINS(
      y.backward(), "backward: a gradient can be created implicitly only for one-element outputs");
  EXPECT_ERROR_CONTAINS(y.backward(ones({3}, kFloat64)),
                        "backward: expected a gradient of shape [2]");
  EXPECT_ERROR_CONTAINS(tensor({1.0}).backward(),
                        "backward: the tensor of shape [1] does not require grad");
}

TEST(Autograd, GradientFlowsOnlyToInputsThatRequireIt) {
  Tensor x = leaf({2.0});
  Tensor constant = tensor({5.0}, kFloat64);
  Tensor y = where(gt(x, 0.0), x * constant, constant);
  y.backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{5.0}));
  EXPECT_FALSE(constant.grad().defined());
}

}  // namespace
}  // namespace minidl
