// Tensor::register_hook, after PyTorch's test_autograd hook tests: a non-leaf's hook sees the
// complete gradient of its value and may replace it before it flows on; a leaf's hook runs
// before accumulation into .grad; order, removal (also from inside a hook), retain_graph, and
// the errors. Gradients are worked out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/autograd/node.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

Tensor leaf(std::initializer_list<double> values) {
  return tensor(values, kFloat64).requires_grad_(true);
}

std::vector<double> values_of(const Tensor& t) { return to_vector<double>(t); }

// x = [1, 2], y = 3x = [3, 6], z = sum(y * y + y): dz/dy = 2y + 1 = [7, 13], dz/dx = 3 dz/dy.
struct Chain {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 3.0;
  Tensor z() const { return (y * y + y).sum(); }
};

TEST(TensorHooks, NonLeafHookSeesTheCompleteGradientOfItsValue) {
  Chain chain;
  std::vector<std::vector<double>> seen;
  chain.y.register_hook([&seen](const Tensor& grad) { seen.push_back(values_of(grad)); });
  chain.z().backward();
  // y reaches z along three edges; the hook runs once, on their sum.
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{7.0, 13.0}));
  EXPECT_EQ(values_of(chain.x.grad()), (std::vector<double>{21.0, 39.0}));
  EXPECT_FALSE(chain.y.grad().defined());  // a hook is not retain_grad
}

TEST(TensorHooks, NonLeafHookCanScaleTheGradientThatFlowsOn) {
  Chain chain;
  chain.y.register_hook([](const Tensor& grad) { return grad * 2.0; });
  chain.z().backward();
  EXPECT_EQ(values_of(chain.x.grad()), (std::vector<double>{42.0, 78.0}));
}

TEST(TensorHooks, ReturningAnUndefinedTensorKeepsTheGradient) {
  Chain chain;
  int calls = 0;
  chain.y.register_hook([&calls](const Tensor&) {
    ++calls;
    return Tensor();
  });
  chain.z().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(values_of(chain.x.grad()), (std::vector<double>{21.0, 39.0}));
}

TEST(TensorHooks, HooksRunInRegistrationOrderEachOnThePreviousResult) {
  Chain chain;
  std::vector<std::string> order;
  std::vector<double> seen_by_second;
  chain.y.register_hook([&](const Tensor& grad) {
    order.push_back("first");
    return grad + 1.0;  // [8, 14]
  });
  chain.y.register_hook([&](const Tensor& grad) {
    order.push_back("second");
    seen_by_second = values_of(grad);
    return grad * 10.0;  // [80, 140]
  });
  chain.y.register_hook([&](const Tensor&) { order.push_back("third"); });
  chain.z().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(seen_by_second, (std::vector<double>{8.0, 14.0}));
  EXPECT_EQ(values_of(chain.x.grad()), (std::vector<double>{240.0, 420.0}));
}

TEST(TensorHooks, HookOnTheRootSeesTheGradientPassedToBackward) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 5.0;
  std::vector<double> seen;
  y.register_hook([&seen](const Tensor& grad) {
    seen = values_of(grad);
    return grad * 3.0;
  });
  y.backward(tensor({1.0, -1.0}, kFloat64));
  EXPECT_EQ(seen, (std::vector<double>{1.0, -1.0}));
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{15.0, -15.0}));
}

TEST(TensorHooks, NonLeafHookOutlivesTheTensorHandle) {
  // As PyTorch's: the hook lives on the tensor's grad_fn, which the graph keeps.
  Tensor x = leaf({2.0});
  Tensor z;
  {
    Tensor y = x * x;  // dy/dx = 2x = 4
    y.register_hook([](const Tensor& grad) { return grad * 0.5; });
    z = y * 1.0;
  }
  z.backward();
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{2.0}));
}

TEST(TensorHooks, LeafHookRunsBeforeAccumulation) {
  Tensor x = leaf({1.0, 2.0});
  std::vector<std::string> events;
  std::vector<std::vector<double>> seen;
  std::vector<double> grad_during_second_hook;
  x.register_hook([&](const Tensor& grad) {
    if (x.grad().defined()) {
      grad_during_second_hook = values_of(x.grad());
    } else {
      events.push_back("hook before .grad");
    }
    seen.push_back(values_of(grad));
    return grad * 2.0;
  });
  x.register_post_accumulate_grad_hook([&](const Tensor& t) {
    events.push_back("post-accumulate");
    seen.push_back(values_of(t.grad()));
  });
  Tensor y = x * tensor({3.0, 4.0}, kFloat64);
  y.sum().backward(Tensor(), /*retain_graph=*/true);
  EXPECT_EQ(events, (std::vector<std::string>{"hook before .grad", "post-accumulate"}));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<double>{3.0, 4.0}));  // the incoming gradient
  EXPECT_EQ(seen[1], (std::vector<double>{6.0, 8.0}));  // .grad holds what the hook returned
  // The second pass: the hook sees the new gradient alone, not the accumulated .grad.
  y.sum().backward();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[2], (std::vector<double>{3.0, 4.0}));
  EXPECT_EQ(grad_during_second_hook, (std::vector<double>{6.0, 8.0}));  // not yet accumulated
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{12.0, 16.0}));
}

TEST(TensorHooks, LeafHookReplacesTheGradientOfABackwardRootedAtTheLeaf) {
  Tensor x = leaf({4.0});
  x.register_hook([](const Tensor& grad) { return grad + 1.0; });
  x.backward();  // d x / d x = 1, the hook makes it 2
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{2.0}));
}

TEST(TensorHooks, RemovedHooksStopRunning) {
  Chain chain;
  int calls = 0;
  const int handle = chain.y.register_hook([&calls](const Tensor& grad) {
    ++calls;
    return grad * 100.0;
  });
  chain.y.remove_hook(handle);
  chain.y.remove_hook(handle);  // a second removal is ignored
  chain.z().backward();
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(values_of(chain.x.grad()), (std::vector<double>{21.0, 39.0}));

  Tensor w = leaf({1.0});
  const int leaf_handle = w.register_hook([&calls](const Tensor& grad) {
    ++calls;
    return grad * 100.0;
  });
  w.remove_hook(leaf_handle);
  (w * 2.0).backward();
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(values_of(w.grad()), (std::vector<double>{2.0}));
}

TEST(TensorHooks, HandlesAreDistinctAndRemoveOnlyTheirHook) {
  Tensor x = leaf({1.0});
  Tensor y = x * 1.0;
  std::vector<int> ran;
  const int first = y.register_hook([&ran](const Tensor&) { ran.push_back(1); });
  const int second = y.register_hook([&ran](const Tensor&) { ran.push_back(2); });
  EXPECT_NE(first, second);
  y.remove_hook(first);
  y.backward();
  EXPECT_EQ(ran, (std::vector<int>{2}));
}

TEST(TensorHooks, HookRemovingItselfRunsThisPassNotTheNext) {
  Tensor x = leaf({1.0});
  Tensor y = x * 2.0;
  int calls = 0;
  int handle = -1;
  handle = y.register_hook([&](const Tensor& grad) {
    ++calls;
    y.remove_hook(handle);
    return grad * 3.0;
  });
  y.backward(Tensor(), /*retain_graph=*/true);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{6.0}));
  y.backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{8.0}));  // 6 + 2, unscaled
}

TEST(TensorHooks, HooksRunOnEveryBackwardOfARetainedGraph) {
  Chain chain;
  int non_leaf_calls = 0, leaf_calls = 0;
  chain.y.register_hook([&](const Tensor& grad) {
    ++non_leaf_calls;
    return grad * 2.0;
  });
  chain.x.register_hook([&](const Tensor&) { ++leaf_calls; });
  Tensor z = chain.z();
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  EXPECT_EQ(non_leaf_calls, 2);
  EXPECT_EQ(leaf_calls, 2);
  EXPECT_EQ(values_of(chain.x.grad()), (std::vector<double>{84.0, 156.0}));
  EXPECT_ERROR_CONTAINS(z.backward(), "backward through the graph a second time");
}

TEST(TensorHooks, ATensorThatDoesNotRequireGradRefusesHooks) {
  Tensor constant = tensor({1.0}, kFloat64);
  EXPECT_ERROR_CONTAINS(constant.register_hook([](const Tensor& grad) { return grad; }),
                        "register_hook: cannot register a hook on a tensor that doesn't require "
                        "gradient");
  EXPECT_ERROR_CONTAINS(leaf({1.0}).register_hook(GradHook()),
                        "register_hook: expected a hook, got an empty std::function");
}

TEST(TensorHooks, AHookReturningAnotherShapeIsAnErrorNamingTheOp) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor& grad) { return grad.sum(); });
  EXPECT_ERROR_CONTAINS(y.sum().backward(),
                        "on the gradient of the output of MulBackward must return a gradient "
                        "like the one it was given (shape [2]");
  Tensor w = leaf({1.0, 2.0});
  w.register_hook([](const Tensor& grad) { return grad.to(kFloat32); });
  EXPECT_ERROR_CONTAINS((w * 1.0).sum().backward(),
                        "on the gradient of a leaf of shape [2] must return a gradient like the "
                        "one it was given (shape [2], dtype float64");
}

}  // namespace
}  // namespace minidl
