// nn::Module: registration, traversal order and names, modes, placement, gradients, apply,
// printing, and the holder pattern.
#include <sstream>
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

using testing::TinyNet;
using testing::TinyNetImpl;

TEST(Module, TraversalsKeepRegistrationOrderOwnEntriesFirst) {
  TinyNet net;
  EXPECT_EQ(
      net->named_parameters().keys(),
      (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(net->named_buffers().keys(), (std::vector<std::string>{"steps"}));
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc1", "fc2"}));
  EXPECT_EQ(net->state_dict().keys(),
            (std::vector<std::string>{"scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight",
                                      "fc2.bias"}));
  EXPECT_EQ(net->named_parameters(/*recurse=*/false).keys(), (std::vector<std::string>{"scale"}));
}

TEST(Module, ParametersAliasTheMembers) {
  TinyNet net;
  const std::vector<Tensor> parameters = net->parameters();
  ASSERT_EQ(parameters.size(), 5u);
  EXPECT_TRUE(parameters[0].is_same(net->scale));
  EXPECT_TRUE(parameters[1].is_same(net->fc1->weight));
  EXPECT_TRUE(parameters[4].is_same(net->fc2->bias));
  for (const Tensor& parameter : parameters) {
    EXPECT_TRUE(parameter.requires_grad());
    EXPECT_TRUE(parameter.is_leaf());
  }
  EXPECT_FALSE(net->steps.requires_grad());
  EXPECT_TRUE(net->buffers()[0].is_same(net->steps));
}

TEST(Module, NestedModulesGiveDottedNames) {
  nn::Sequential outer{TinyNet(), nn::ReLU(), TinyNet()};
  const std::vector<std::string> keys = outer->named_parameters().keys();
  ASSERT_EQ(keys.size(), 10u);
  EXPECT_EQ(keys[0], "0.scale");
  EXPECT_EQ(keys[1], "0.fc1.weight");
  EXPECT_EQ(keys[5], "2.scale");
  EXPECT_EQ(keys[9], "2.fc2.bias");
  EXPECT_EQ(outer->named_buffers().keys(), (std::vector<std::string>{"0.steps", "2.steps"}));
  EXPECT_EQ(outer->named_modules().keys(),
            (std::vector<std::string>{"", "0", "0.fc1", "0.fc2", "1", "2", "2.fc1", "2.fc2"}));
}

TEST(Module, SharedParameterIsListedOnceButSavedUnderEveryName) {
  struct TiedImpl : nn::Module {
    TiedImpl() {
      first = register_module("first", nn::Linear(3, 3));
      second = register_module("second", first);
    }
    nn::Linear first{nullptr}, second{nullptr};
  };
  auto tied = std::make_shared<TiedImpl>();
  EXPECT_EQ(tied->named_parameters().keys(),
            (std::vector<std::string>{"first.weight", "first.bias"}));
  EXPECT_EQ(tied->modules().size(), 2u);  // the root and the one Linear
  EXPECT_EQ(tied->state_dict().keys(), (std::vector<std::string>{"first.weight", "first.bias",
                                                                 "second.weight", "second.bias"}));
}

TEST(Module, RegistrationErrorsNameTheModuleAndTheEntry) {
  struct BadImpl : nn::Module {};
  BadImpl module;
  module.register_parameter("weight", zeros({2}));
  EXPECT_ERROR_CONTAINS(module.register_parameter("weight", zeros({2})),
                        "Bad.register_parameter: 'weight' is already registered as a parameter");
  EXPECT_ERROR_CONTAINS(module.register_buffer("weight", zeros({2})),
                        "'weight' is already registered as a parameter");
  EXPECT_ERROR_CONTAINS(module.register_module("weight", nn::ReLU()),
                        "'weight' is already registered as a parameter");
  EXPECT_ERROR_CONTAINS(module.register_parameter("a.b", zeros({2})), "must not contain '.'");
  EXPECT_ERROR_CONTAINS(module.register_parameter("", zeros({2})), "expected a non-empty name");
  EXPECT_ERROR_CONTAINS(module.register_parameter("undefined", Tensor()), "is undefined");
  EXPECT_ERROR_CONTAINS(
      module.register_parameter("index", zeros({2}, kInt64)),
      "only floating-point tensors can require grad, but 'index' has dtype int64");
  Tensor leaf = ones({2});
  leaf.requires_grad_();
  EXPECT_ERROR_CONTAINS(module.register_parameter("computed", leaf * 2.0), "is not a leaf");
  EXPECT_ERROR_CONTAINS(module.register_module("empty", nn::Linear(nullptr)),
                        "submodule 'empty' is null");
  // An integer tensor is fine as a parameter that does not require grad, or as a buffer.
  EXPECT_FALSE(module.register_parameter("frozen", zeros({2}, kInt64), false).requires_grad());
  EXPECT_EQ(module.register_buffer("count", zeros({}, kInt64)).dtype(), kInt64);
}

TEST(Module, NameComesFromTheClassWithoutImpl) {
  TinyNet net;
  EXPECT_EQ(net->name(), "TinyNet");
  EXPECT_EQ(nn::Linear(2, 3)->name(), "Linear");
  struct CustomImpl : nn::Module {
    CustomImpl() : nn::Module("MyName") {}
  };
  EXPECT_EQ(CustomImpl().name(), "MyName");
}

TEST(Module, TrainAndEvalReachEveryDescendant) {
  nn::Sequential outer{TinyNet(), nn::Dropout(0.5)};
  for (const auto& module : outer->modules()) EXPECT_TRUE(module->is_training());
  outer->eval();
  for (const auto& module : outer->modules()) EXPECT_FALSE(module->is_training()) << module->name();
  outer->train();
  for (const auto& module : outer->modules()) EXPECT_TRUE(module->is_training()) << module->name();
  outer->train(false);
  EXPECT_FALSE(outer->at<nn::DropoutImpl>(1).is_training());
}

TEST(Module, ToDtypeConvertsFloatingTensorsInPlaceAndKeepsLeaves) {
  TinyNet net;
  const Tensor weight_alias = net->fc1->weight;  // as an optimizer would hold it
  const std::vector<double> before = to_vector<double>(weight_alias);
  net->to(kFloat64);
  for (const Tensor& parameter : net->parameters()) {
    EXPECT_EQ(parameter.dtype(), kFloat64);
    EXPECT_TRUE(parameter.requires_grad());
    EXPECT_TRUE(parameter.is_leaf());
  }
  EXPECT_EQ(weight_alias.dtype(), kFloat64);           // the alias sees the conversion
  EXPECT_EQ(to_vector<double>(weight_alias), before);  // float32 -> float64 is exact
  EXPECT_EQ(net->steps.dtype(), kInt64);               // integer buffers keep their dtype

  Tensor loss = sum(net->forward(randn({5, 4}, kFloat64)));
  loss.backward();
  ASSERT_TRUE(weight_alias.grad().defined());
  EXPECT_EQ(weight_alias.grad().dtype(), kFloat64);
  EXPECT_ERROR_CONTAINS(net->to(kInt32), "expected a floating-point dtype");
}

TEST(Module, ToDtypeConvertsExistingGradients) {
  TinyNet net;
  sum(net->forward(randn({2, 4}))).backward();
  net->to(kFloat64);
  for (const Tensor& parameter : net->parameters()) {
    ASSERT_TRUE(parameter.grad().defined());
    EXPECT_EQ(parameter.grad().dtype(), kFloat64);
  }
}

TEST(Module, ToTheSameDeviceAndDtypeKeepsTheStorage) {
  TinyNet net;
  const void* data = net->fc1->weight.data_ptr();
  net->to(Device(kCPU));
  net->to(kFloat32);
  net->to(Device(kCPU), kFloat32);
  EXPECT_EQ(net->fc1->weight.data_ptr(), data);
}

TEST(Module, ZeroGradDropsOrZeroesGradients) {
  TinyNet net;
  sum(net->forward(randn({3, 4}))).backward();
  for (const Tensor& parameter : net->parameters()) ASSERT_TRUE(parameter.grad().defined());

  net->zero_grad(/*set_to_none=*/false);
  for (const Tensor& parameter : net->parameters()) {
    ASSERT_TRUE(parameter.grad().defined());
    EXPECT_EQ(max(abs(parameter.grad())).item<float>(), 0.0f);
  }
  net->zero_grad();
  for (const Tensor& parameter : net->parameters()) EXPECT_FALSE(parameter.grad().defined());
}

TEST(Module, ApplyVisitsEveryModulePreOrder) {
  nn::Sequential outer{TinyNet(), nn::ReLU()};
  std::vector<std::string> visited;
  outer->apply([&](const std::string& name, nn::Module& module) {
    visited.push_back(name + ":" + module.name());
  });
  EXPECT_EQ(visited, (std::vector<std::string>{":Sequential", "0:TinyNet", "0.fc1:Linear",
                                               "0.fc2:Linear", "1:ReLU"}));
  // The usual use: re-initialise every layer of one kind.
  outer->apply([](nn::Module& module) {
    if (auto* linear = dynamic_cast<nn::LinearImpl*>(&module)) nn::init::zeros_(linear->weight);
  });
  for (const auto& item : outer->named_parameters())
    if (item.key().ends_with(".weight")) EXPECT_EQ(max(abs(item.value())).item<float>(), 0.0f);
}

TEST(Module, ModulesIncludeSelfOnlyWhenHeldBySharedPtr) {
  TinyNet net;
  const auto modules = net->modules();
  ASSERT_EQ(modules.size(), 3u);
  EXPECT_EQ(modules[0].get(), net.get());
  EXPECT_EQ(modules[1].get(), net->fc1.get());
  EXPECT_EQ(net->modules(/*include_self=*/false).size(), 2u);
  EXPECT_EQ(net->children().size(), 2u);

  TinyNetImpl on_stack;
  EXPECT_EQ(on_stack.modules(/*include_self=*/false).size(), 2u);
  EXPECT_ERROR_CONTAINS(on_stack.modules(), "must be held by a std::shared_ptr");
}

TEST(Module, PrintingShowsTheTreeWithShapesAndCounts) {
  TinyNet net;
  int64_t total = 0;
  for (const Tensor& parameter : net->parameters()) total += parameter.numel();
  std::ostringstream printed;
  printed << net;
  const std::string text = printed.str();
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> all_lines;
  while (std::getline(lines, line)) all_lines.push_back(line);
  ASSERT_EQ(all_lines.size(), 3u) << text;
  EXPECT_EQ(all_lines[0],
            "TinyNet  # " + std::to_string(total) + " parameters: scale [3]; buffers: steps []");
  EXPECT_EQ(all_lines[1], "  (fc1): Linear(in_features=4, out_features=3, bias=true)  # " +
                              std::to_string(net->fc1->weight.numel() + net->fc1->bias.numel()) +
                              " parameters: weight [3, 4], bias [3]");
  EXPECT_EQ(all_lines[2].rfind("  (fc2): Linear(in_features=3, out_features=2", 0), 0u);

  std::ostringstream nested;
  nested << nn::Sequential{nn::Sequential{nn::ReLU()}, nn::Identity()};
  EXPECT_EQ(nested.str(), "Sequential\n  (0): Sequential\n    (0): ReLU()\n  (1): Identity()");
}

TEST(Module, FormatCountGroupsThousands) {
  EXPECT_EQ(nn::format_count(0), "0");
  EXPECT_EQ(nn::format_count(999), "999");
  EXPECT_EQ(nn::format_count(61706), "61,706");
  EXPECT_EQ(nn::format_count(11173962), "11,173,962");
}

TEST(ModuleHolder, CopiesAliasTheSameModule) {
  nn::Linear first(3, 2);
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization): the copy is what is tested
  nn::Linear copy = first;
  EXPECT_EQ(copy.get(), first.get());
  nn::init::ones_(copy->weight);
  EXPECT_EQ(min(first->weight).item<float>(), 1.0f);
  copy->eval();
  EXPECT_FALSE(first->is_training());

  // fc(x) is fc->forward(x).
  Tensor x = randn({4, 3});
  EXPECT_TRUE(testing::all_close(first(x), first->forward(x), 0, 0));
}

TEST(ModuleHolder, EmptyAndDefaultConstructedHolders) {
  nn::Linear empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_ERROR_CONTAINS(empty->forward(zeros({1, 1})), "accessing an empty module holder");
  empty = nn::Linear(2, 2);
  EXPECT_FALSE(empty.is_empty());

  nn::ReLU relu_module;  // ReLUImpl has a default constructor
  EXPECT_FALSE(relu_module.is_empty());
  nn::Linear from_pointer(std::make_shared<nn::LinearImpl>(2, 5));
  EXPECT_EQ(from_pointer->options.out_features(), 5);
}

// The Trainer captures a step in a CUDA graph only when every module says it may; modules that
// draw random numbers each step say no, and a user's module can say so too.
struct NoisyImpl : nn::Module {
  Tensor forward(const Tensor& x) { return x + randn(x.sizes()); }
  bool is_cuda_graph_safe() const override { return false; }
};

TEST(Module, SaysWhetherItsStepMayBeCapturedInACudaGraph) {
  EXPECT_TRUE(nn::Linear(3, 2)->is_cuda_graph_safe());
  EXPECT_TRUE(nn::Dropout(nn::DropoutOptions(0.0))->is_cuda_graph_safe());
  EXPECT_FALSE(nn::Dropout(nn::DropoutOptions(0.5))->is_cuda_graph_safe());
  EXPECT_FALSE(NoisyImpl().is_cuda_graph_safe());
  nn::Sequential net{nn::Linear(3, 3), nn::Dropout(nn::DropoutOptions(0.2)), nn::Linear(3, 1)};
  std::vector<std::string> unsafe;
  for (const auto& item : net->named_modules())
    if (!item.value()->is_cuda_graph_safe()) unsafe.push_back(item.key());
  EXPECT_EQ(unsafe, std::vector<std::string>{"1"});
}

}  // namespace
}  // namespace minidl
