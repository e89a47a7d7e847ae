// Forward pre-hooks and forward hooks on modules, after PyTorch's test_module_hooks.py: what
// they see, replacing the input and the output, order, removal (also from inside a hook and
// after the module is gone), the calls that run them (holder, Sequential, AnyModule) and the one
// that does not (forward itself), gradients through a hook, and the error for a forward of
// another signature.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_modules.h"
#include "test_util.h"

namespace minidl {
namespace {

std::vector<float> values_of(const Tensor& t) { return to_vector<float>(t); }

TEST(ModuleHooks, ForwardHookSeesTheModuleItsInputAndItsOutput) {
  nn::Linear fc(3, 2);
  const Tensor x = randn({4, 3});
  nn::Module* seen_module = nullptr;
  Tensor seen_input, seen_output;
  fc->register_forward_hook([&](nn::Module& module, const Tensor& input, const Tensor& output) {
    seen_module = &module;
    seen_input = input;
    seen_output = output;
  });
  const Tensor y = fc(x);
  EXPECT_EQ(seen_module, fc.get());
  EXPECT_TRUE(seen_input.is_same(x));
  EXPECT_TRUE(seen_output.is_same(y));
  EXPECT_TRUE(testing::all_close(y, fc->forward(x), 0, 0));
}

TEST(ModuleHooks, PreHookReplacesTheInputThatForwardAndForwardHooksSee) {
  nn::Linear fc(3, 2);
  const Tensor x = randn({4, 3});
  Tensor seen_input;
  fc->register_forward_pre_hook(
      [](nn::Module&, const Tensor& input) -> std::optional<Tensor> { return input * 2.0; });
  fc->register_forward_hook(
      [&](nn::Module&, const Tensor& input, const Tensor&) { seen_input = input; });
  const Tensor y = fc(x);
  EXPECT_TRUE(testing::all_close(y, fc->forward(x * 2.0), 0, 0));
  EXPECT_TRUE(testing::all_close(seen_input, x * 2.0, 0, 0));
}

TEST(ModuleHooks, ForwardHookReplacesTheOutput) {
  nn::Linear fc(3, 2);
  const Tensor x = randn({4, 3});
  fc->register_forward_hook([](nn::Module&, const Tensor&, const Tensor& output) {
    return output + 1.0;  // a Tensor converts to std::optional<Tensor>
  });
  EXPECT_TRUE(testing::all_close(fc(x), fc->forward(x) + 1.0, 0, 0));
}

TEST(ModuleHooks, NulloptAndUndefinedTensorsKeepTheValues) {
  nn::Identity identity;
  const Tensor x = tensor({1.0, 2.0});
  int calls = 0;
  identity->register_forward_pre_hook([&](nn::Module&, const Tensor&) -> std::optional<Tensor> {
    ++calls;
    return std::nullopt;
  });
  identity->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    ++calls;
    return Tensor();
  });
  EXPECT_TRUE(identity(x).is_same(x));
  EXPECT_EQ(calls, 2);
}

TEST(ModuleHooks, HooksRunInRegistrationOrderEachOnThePreviousResult) {
  nn::Identity identity;
  std::vector<std::string> order;
  identity->register_forward_pre_hook([&](nn::Module&, const Tensor& input) {
    order.push_back("pre 1");
    return std::optional<Tensor>(input + 1.0);
  });
  identity->register_forward_pre_hook([&](nn::Module&, const Tensor& input) {
    order.push_back("pre 2");
    return std::optional<Tensor>(input * 2.0);
  });
  identity->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& output) {
    order.push_back("hook 1");
    return std::optional<Tensor>(output + 1.0);
  });
  identity->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& output) {
    order.push_back("hook 2");
    return std::optional<Tensor>(output * 3.0);
  });
  // ((x + 1) * 2 + 1) * 3
  EXPECT_EQ(values_of(identity(tensor({1.0, 2.0}))), (std::vector<float>{15.0f, 21.0f}));
  EXPECT_EQ(order, (std::vector<std::string>{"pre 1", "pre 2", "hook 1", "hook 2"}));
}

TEST(ModuleHooks, ARemovedHookNoLongerRuns) {
  nn::Identity identity;
  int pre_calls = 0, calls = 0;
  nn::RemovableHandle pre =
      identity->register_forward_pre_hook([&](nn::Module&, const Tensor&) { ++pre_calls; });
  nn::RemovableHandle post = identity->register_forward_hook(
      [&](nn::Module&, const Tensor&, const Tensor& output) { return output * 10.0; });
  identity->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls; });
  EXPECT_EQ(values_of(identity(tensor({1.0}))), (std::vector<float>{10.0f}));
  EXPECT_NE(pre.id(), post.id());
  pre.remove();
  post.remove();
  post.remove();  // idempotent
  EXPECT_EQ(values_of(identity(tensor({1.0}))), (std::vector<float>{1.0f}));
  EXPECT_EQ(pre_calls, 1);
  EXPECT_EQ(calls, 2);  // the hook that was not removed still runs
  EXPECT_TRUE(identity->has_forward_hooks());
  nn::RemovableHandle().remove();  // a default handle refers to no hook
}

TEST(ModuleHooks, RemovingAfterTheModuleIsGoneIsSafe) {
  nn::RemovableHandle handle;
  {
    nn::Linear fc(2, 2);
    handle = fc->register_forward_hook([](nn::Module&, const Tensor&, const Tensor&) {});
  }
  handle.remove();
  handle.remove();
}

TEST(ModuleHooks, AHookRemovingHooksDuringACallChangesTheNextCall) {
  // As PyTorch, which iterates a snapshot of the hooks: removals take effect from the next call.
  nn::Identity identity;
  std::vector<std::string> ran;
  nn::RemovableHandle second;
  nn::RemovableHandle first =
      identity->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
        ran.push_back("first");
        first.remove();   // itself
        second.remove();  // the next one, which still runs in this call
      });
  second = identity->register_forward_hook(
      [&](nn::Module&, const Tensor&, const Tensor&) { ran.push_back("second"); });
  identity(tensor({1.0}));
  EXPECT_EQ(ran, (std::vector<std::string>{"first", "second"}));
  identity(tensor({1.0}));
  EXPECT_EQ(ran.size(), 2u);
  EXPECT_FALSE(identity->has_forward_hooks());
}

TEST(ModuleHooks, CallingForwardDirectlySkipsTheHooks) {
  nn::Identity identity;
  int calls = 0;
  identity->register_forward_pre_hook([&](nn::Module&, const Tensor&) { ++calls; });
  identity->forward(tensor({1.0}));
  EXPECT_EQ(calls, 0);
  identity(tensor({1.0}));
  EXPECT_EQ(calls, 1);
}

TEST(ModuleHooks, SequentialRunsTheHooksOfItsElementsAndItsOwn) {
  nn::Linear first(3, 4), last(4, 2);
  nn::ReLU middle;
  nn::Sequential inner{middle, last};
  nn::Sequential outer{first, inner};
  std::vector<std::string> order;
  auto record = [&order](const std::string& name) {
    return [&order, name](nn::Module&, const Tensor&) { order.push_back(name + " pre"); };
  };
  auto record_after = [&order](const std::string& name) {
    return [&order, name](nn::Module&, const Tensor&, const Tensor&) {
      order.push_back(name + " post");
    };
  };
  for (auto& [name, module] :
       std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{{"outer", outer.ptr()},
                                                                        {"first", first.ptr()},
                                                                        {"inner", inner.ptr()},
                                                                        {"middle", middle.ptr()},
                                                                        {"last", last.ptr()}}) {
    module->register_forward_pre_hook(record(name));
    module->register_forward_hook(record_after(name));
  }
  outer(randn({2, 3}));
  EXPECT_EQ(order, (std::vector<std::string>{"outer pre", "first pre", "first post", "inner pre",
                                             "middle pre", "middle post", "last pre", "last post",
                                             "inner post", "outer post"}));
  order.clear();
  outer->forward(randn({2, 3}));  // the elements' hooks only, as PyTorch's seq.forward(x)
  EXPECT_EQ(order.front(), "first pre");
  EXPECT_EQ(order.back(), "inner post");
}

TEST(ModuleHooks, AReplacementInsideASequentialFlowsToTheNextElement) {
  nn::Identity scaled;
  nn::Sequential sequence{nn::Identity(), scaled, nn::Identity()};
  scaled->register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& output) { return output * -1.0; });
  EXPECT_EQ(values_of(sequence(tensor({1.0, 2.0}))), (std::vector<float>{-1.0f, -2.0f}));
  nn::AnyModule any(scaled);
  EXPECT_EQ(values_of(any.forward(tensor({3.0}))), (std::vector<float>{-3.0f}));
}

TEST(ModuleHooks, HooksOnAChildCalledThroughItsHolderChangeTheParentsOutput) {
  testing::TinyNet net;
  const Tensor x = randn({2, 4});
  const Tensor before = net(x);
  net->fc1->register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& output) { return output * 0.0; });
  // relu(0) * scale = 0, so the output is fc2's bias alone.
  EXPECT_TRUE(testing::all_close(net(x), net->fc2->bias.detach().expand({2, 2}), 0, 0));
  EXPECT_FALSE(testing::all_close(before, net(x), 0, 0));
}

TEST(ModuleHooks, GradientsFlowThroughWhatAHookComputes) {
  nn::Linear fc(3, 1);
  const Tensor x = randn({5, 3});
  fc(x).sum().backward();
  const Tensor plain_weight_grad = fc->weight.grad().clone();
  fc->zero_grad();
  fc->register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& output) { return output * 2.0; });
  fc(x).sum().backward();
  EXPECT_TRUE(testing::all_close(fc->weight.grad(), plain_weight_grad * 2.0, 1e-6, 1e-6));
}

TEST(ModuleHooks, AHookedModuleCalledWithAnotherSignatureIsAnError) {
  nn::MSELoss loss;
  const Tensor input = randn({3}), target = randn({3});
  EXPECT_NO_THROW(loss(input, target));  // without hooks any signature is called as is
  nn::RemovableHandle handle =
      loss->register_forward_hook([](nn::Module&, const Tensor&, const Tensor&) {});
  EXPECT_ERROR_CONTAINS(loss(input, target),
                        "MSELoss: has 0 forward pre-hook(s) and 1 forward hook(s), which run only "
                        "around a forward that takes one Tensor and returns a Tensor");
  handle.remove();
  EXPECT_NO_THROW(loss(input, target));
}

TEST(ModuleHooks, AnEmptyHookIsAnError) {
  nn::Identity identity;
  EXPECT_ERROR_CONTAINS(identity->register_forward_pre_hook(nn::ForwardPreHook()),
                        "Identity.register_forward_pre_hook: expected a hook");
  EXPECT_ERROR_CONTAINS(identity->register_forward_hook(nn::ForwardHook()),
                        "Identity.register_forward_hook: expected a hook");
}

}  // namespace
}  // namespace minidl
