// nn::ModuleList and nn::ModuleDict, after LibTorch's modulelist.cpp and moduledict.cpp tests:
// naming and parameter order, appending, inserting, typed access, the errors, printing, state
// dict round trips, and a model written with a ModuleList training exactly as the same model
// written with members. Also Module::replace_module and unregister_module, which they use.
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/optim/sgd.h"
#include "test_modules.h"
#include "test_util.h"

namespace minidl {
namespace {

using Names = std::vector<std::string>;

// ---- ModuleList ----

// A model that keeps its layers in a ModuleList, and the same model with a member per layer.
struct ListMlpImpl : nn::Module {
  ListMlpImpl() {
    layers = register_module("layers", nn::ModuleList(nn::Linear(4, 8), nn::Linear(8, 3)));
  }
  Tensor forward(Tensor x) {
    for (size_t i = 0; i < layers->size(); ++i) {
      x = layers->at<nn::LinearImpl>(i).forward(x);
      if (i + 1 < layers->size()) x = relu(x);
    }
    return x;
  }
  nn::ModuleList layers{nullptr};
};
MINIDL_MODULE(ListMlp);

struct MemberMlpImpl : nn::Module {
  MemberMlpImpl() {
    first = register_module("first", nn::Linear(4, 8));
    second = register_module("second", nn::Linear(8, 3));
  }
  Tensor forward(const Tensor& x) { return second(relu(first(x))); }
  nn::Linear first{nullptr}, second{nullptr};
};
MINIDL_MODULE(MemberMlp);

TEST(ModuleList, ElementsAreChildrenNamedByPosition) {
  ListMlp model;
  EXPECT_EQ(model->layers->named_children().keys(), (Names{"0", "1"}));
  EXPECT_EQ(model->named_parameters().keys(),
            (Names{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"}));
  EXPECT_EQ(model->state_dict().keys(), model->named_parameters().keys());
  EXPECT_TRUE(model->parameters()[2].is_same(model->layers->at<nn::LinearImpl>(1).weight));
  EXPECT_EQ(model->named_modules().keys(), (Names{"", "layers", "layers.0", "layers.1"}));
}

TEST(ModuleList, PushBackAppendAndExtendTakeHoldersAndPointers) {
  nn::ModuleList list;
  EXPECT_TRUE(list->is_empty());
  nn::Linear linear(2, 3);
  list->push_back(linear);
  list->append(std::make_shared<nn::ReLUImpl>());
  nn::ModuleList more(nn::Tanh(), nn::Linear(3, 1));
  list->extend(*more);
  list->extend(std::vector<std::shared_ptr<nn::Module>>{nn::Sigmoid()});
  EXPECT_EQ(list->size(), 5u);
  EXPECT_EQ(list->named_children().keys(), (Names{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(list[0].get(), linear.get());  // the holder indexes too
  Names classes;
  for (const std::shared_ptr<nn::Module>& module : *list) classes.push_back(module->name());
  EXPECT_EQ(classes, (Names{"Linear", "ReLU", "Tanh", "Linear", "Sigmoid"}));
  list->extend(*list);  // by itself: appends each element once
  EXPECT_EQ(list->size(), 10u);
  EXPECT_EQ(list->ptr(9)->name(), "Sigmoid");
}

TEST(ModuleList, InsertRenamesTheLaterElementsAsPyTorch) {
  nn::Linear a(1, 1), b(1, 2), c(1, 3);
  nn::ModuleList list(a, c);
  list->insert(1, b);
  EXPECT_EQ(list->named_children().keys(), (Names{"0", "1", "2"}));
  EXPECT_EQ(list->named_children()["1"].get(), b.get());
  EXPECT_EQ(list->named_children()["2"].get(), c.get());
  EXPECT_TRUE(list->named_parameters()["2.weight"].is_same(c->weight));
  nn::ReLU front;
  list->insert(0, front);
  list->insert(4, nn::Tanh());  // at the end
  Names order;
  for (const auto& child : list->named_children())
    order.push_back(child.key() + ":" + child.value()->name());
  EXPECT_EQ(order, (Names{"0:ReLU", "1:Linear", "2:Linear", "3:Linear", "4:Tanh"}));
  EXPECT_EQ(list->at(2).get(), b.get());
  EXPECT_ERROR_CONTAINS(list->insert(6, nn::ReLU()),
                        "ModuleList::insert: index 6 is out of range for a list of 5 module(s)");
}

TEST(ModuleList, TypedAccessGivesTheModuleClass) {
  nn::Linear linear(2, 3);
  nn::ModuleList list(linear, nn::ReLU());
  std::shared_ptr<nn::LinearImpl> typed = list->ptr<nn::LinearImpl>(0);
  EXPECT_EQ(typed.get(), linear.get());
  EXPECT_EQ(&list->at<nn::LinearImpl>(0), linear.get());
  EXPECT_EQ(list->ptr(1)->name(), "ReLU");
  EXPECT_EQ(list->at(1).get(), list[1].get());
  EXPECT_ERROR_CONTAINS(list->ptr<nn::LinearImpl>(1),
                        "ModuleList::ptr: element 1 is a ReLU, not the requested module class");
  EXPECT_ERROR_CONTAINS(list->at(2), "ModuleList: index 2 is out of range for 2 module(s)");
  // The element called through a holder runs its forward hooks.
  int calls = 0;
  linear->register_forward_hook([&calls](nn::Module&, const Tensor&, const Tensor&) { ++calls; });
  nn::Linear(list->ptr<nn::LinearImpl>(0))(randn({1, 2}));
  EXPECT_EQ(calls, 1);
}

TEST(ModuleList, RejectsEmptyHoldersAndItself) {
  nn::ModuleList list{nn::ReLU()};
  EXPECT_ERROR_CONTAINS(list->push_back(nn::Linear(nullptr)),
                        "ModuleList::push_back: expected a module, got an empty holder");
  EXPECT_ERROR_CONTAINS(list->insert(0, list), "ModuleList::insert: a ModuleList cannot hold");
  EXPECT_EQ(list->size(), 1u);  // a refused insert changes nothing
  EXPECT_EQ(list->named_children().keys(), (Names{"0"}));
}

TEST(ModuleList, PrintsItsElementsByPosition) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  std::ostringstream out;
  out << list;
  EXPECT_EQ(out.str(),
            "ModuleList  # 9 parameters\n"
            "  (0): Linear(in_features=2, out_features=3, bias=true)  # 9 parameters: weight "
            "[3, 2], bias [3]\n"
            "  (1): ReLU()");
}

TEST(ModuleList, StateDictRoundTrip) {
  ListMlp source, target;
  EXPECT_FALSE(testing::all_close(source->layers->at<nn::LinearImpl>(1).weight,
                                  target->layers->at<nn::LinearImpl>(1).weight, 0, 0));
  target->load_state_dict(source->state_dict());
  const auto source_state = source->state_dict();
  for (const auto& item : target->state_dict())
    EXPECT_TRUE(testing::all_close(item.value(), source_state[item.key()], 0, 0)) << item.key();
}

TEST(ModuleList, TrainsOneStepExactlyAsTheSameModelWithMembers) {
  ListMlp listed;
  MemberMlp members;
  // Same weights, matched by position: the two models traverse parameters in the same order.
  {
    NoGradGuard no_grad;
    const std::vector<Tensor> from = listed->parameters(), to = members->parameters();
    ASSERT_EQ(from.size(), to.size());
    for (size_t i = 0; i < from.size(); ++i) Tensor(to[i]).copy_(from[i]);
  }
  const Tensor initial_first_weight = listed->parameters()[0].clone();
  const Tensor x = randn({6, 4});
  const Tensor target = tensor(std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  for (nn::Module* model : std::vector<nn::Module*>{listed.get(), members.get()}) {
    optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    const Tensor logits = model == listed.get() ? listed(x) : members(x);
    cross_entropy(logits, target).backward();
    optimizer.step();
  }
  const std::vector<Tensor> after_list = listed->parameters(),
                            after_members = members->parameters();
  for (size_t i = 0; i < after_list.size(); ++i) {
    EXPECT_TRUE(testing::all_close(after_list[i], after_members[i], 0, 0)) << "parameter " << i;
    EXPECT_TRUE(testing::all_close(after_list[i].grad(), after_members[i].grad(), 0, 0));
  }
  // The step changed the weights, so the comparison above compared trained weights.
  EXPECT_FALSE(testing::all_close(after_list[0], initial_first_weight, 0, 0));
}

// ---- ModuleDict ----

TEST(ModuleDict, KeepsInsertionOrderAndNamesChildrenByKey) {
  nn::Linear conv_like(3, 3);
  nn::ModuleDict dict({{"zeta", conv_like}, {"alpha", nn::ReLU()}, {"mid", nn::Linear(3, 1)}});
  EXPECT_EQ(dict->keys(), (Names{"zeta", "alpha", "mid"}));
  EXPECT_EQ(dict->named_children().keys(), (Names{"zeta", "alpha", "mid"}));
  EXPECT_EQ(dict->named_parameters().keys(),
            (Names{"zeta.weight", "zeta.bias", "mid.weight", "mid.bias"}));
  ASSERT_EQ(dict->values().size(), 3u);
  EXPECT_EQ(dict->values()[0].get(), conv_like.get());
  Names from_items;
  for (const auto& item : *dict) from_items.push_back(item.key() + ":" + item.value()->name());
  EXPECT_EQ(from_items, (Names{"zeta:Linear", "alpha:ReLU", "mid:Linear"}));
  EXPECT_EQ(dict->items().size(), 3u);
  EXPECT_TRUE(dict->contains("alpha"));
  EXPECT_FALSE(dict->contains("beta"));
  EXPECT_EQ(dict["zeta"].get(), conv_like.get());
  EXPECT_EQ(dict->size(), 3u);
}

TEST(ModuleDict, InsertingAnExistingKeyReplacesInPlace) {
  nn::ModuleDict dict({{"a", nn::Linear(2, 2)}, {"b", nn::ReLU()}});
  nn::Linear replacement(2, 5);
  dict->insert("a", replacement);
  EXPECT_EQ(dict->keys(), (Names{"a", "b"}));
  EXPECT_EQ(dict->named_children().keys(), (Names{"a", "b"}));
  EXPECT_EQ(dict->at("a").get(), replacement.get());
  EXPECT_TRUE(dict->named_parameters()["a.weight"].is_same(replacement->weight));
  dict->update({{"c", nn::Tanh()}, {"b", nn::Sigmoid()}});
  EXPECT_EQ(dict->keys(), (Names{"a", "b", "c"}));
  EXPECT_EQ(dict->at("b")->name(), "Sigmoid");
  nn::ModuleDict other({{"d", nn::Identity()}, {"a", nn::ReLU()}});
  dict->update(*other);
  EXPECT_EQ(dict->keys(), (Names{"a", "b", "c", "d"}));
  EXPECT_EQ(dict->at("a")->name(), "ReLU");
  EXPECT_TRUE(dict->named_parameters().is_empty());  // the replaced Linear's are gone
}

TEST(ModuleDict, MissingKeysAreErrorsNamingTheKeysPresent) {
  nn::ModuleDict dict({{"a", nn::ReLU()}, {"b", nn::Tanh()}});
  EXPECT_ERROR_CONTAINS(dict["nope"],
                        "ModuleDict::at: no module under key 'nope' (keys: 'a', 'b')");
  EXPECT_ERROR_CONTAINS(dict->pop("nope"), "ModuleDict::pop: no module under key 'nope'");
  nn::ModuleDict empty;
  EXPECT_ERROR_CONTAINS(empty->at("x"), "(keys: none)");
  EXPECT_ERROR_CONTAINS(dict->insert("has.dot", nn::ReLU()), "must not contain '.'");
  EXPECT_ERROR_CONTAINS(dict->insert("c", nn::ReLU(nullptr)),
                        "ModuleDict::insert: the module for 'c' is an empty holder");
  EXPECT_EQ(dict->keys(), (Names{"a", "b"}));
}

TEST(ModuleDict, TypedAccessGivesTheModuleClass) {
  nn::Linear linear(2, 3);
  nn::ModuleDict dict({{"fc", linear}, {"act", nn::ReLU()}});
  EXPECT_EQ(dict->ptr<nn::LinearImpl>("fc").get(), linear.get());
  EXPECT_EQ(&dict->at<nn::LinearImpl>("fc"), linear.get());
  EXPECT_ERROR_CONTAINS(dict->at<nn::LinearImpl>("act"),
                        "ModuleDict::ptr: the module under 'act' is a ReLU, not the requested");
}

TEST(ModuleDict, PopAndClearUnregisterTheChildren) {
  nn::Linear middle(2, 2);
  nn::ModuleDict dict({{"a", nn::Linear(2, 2)}, {"m", middle}, {"z", nn::Linear(2, 2)}});
  std::shared_ptr<nn::Module> popped = dict->pop("m");
  EXPECT_EQ(popped.get(), middle.get());
  EXPECT_EQ(dict->keys(), (Names{"a", "z"}));
  EXPECT_EQ(dict->named_parameters().keys(), (Names{"a.weight", "a.bias", "z.weight", "z.bias"}));
  dict->insert("m", middle);  // a popped key can come back, at the end
  EXPECT_EQ(dict->keys(), (Names{"a", "z", "m"}));
  dict->clear();
  EXPECT_TRUE(dict->is_empty());
  EXPECT_TRUE(dict->named_children().is_empty());
  EXPECT_TRUE(dict->parameters().empty());
}

TEST(ModuleDict, StateDictRoundTripInsideAModel) {
  struct HeadsImpl : nn::Module {
    HeadsImpl() {
      heads = register_module(
          "heads", nn::ModuleDict({{"digits", nn::Linear(4, 10)}, {"parity", nn::Linear(4, 2)}}));
    }
    nn::ModuleDict heads{nullptr};
  };
  auto source = std::make_shared<HeadsImpl>(), target = std::make_shared<HeadsImpl>();
  EXPECT_EQ(source->state_dict().keys(), (Names{"heads.digits.weight", "heads.digits.bias",
                                                "heads.parity.weight", "heads.parity.bias"}));
  target->load_state_dict(source->state_dict());
  const auto source_state = source->state_dict();
  for (const auto& item : target->state_dict())
    EXPECT_TRUE(testing::all_close(item.value(), source_state[item.key()], 0, 0)) << item.key();
  std::ostringstream out;
  out << *source;
  EXPECT_NE(out.str().find("(heads): ModuleDict  # 60 parameters\n    (digits): Linear("),
            std::string::npos)
      << out.str();
}

// ---- Module::replace_module and unregister_module ----

TEST(ModuleChildren, ReplaceKeepsThePlaceAndUnregisterRemoves) {
  testing::TinyNet net;
  nn::Linear wider(4, 3);
  net->replace_module("fc1", wider);
  EXPECT_EQ(net->named_children().keys(), (Names{"fc1", "fc2"}));
  EXPECT_TRUE(net->named_parameters()["fc1.weight"].is_same(wider->weight));
  net->unregister_module("fc1");
  EXPECT_EQ(net->named_children().keys(), (Names{"fc2"}));
  EXPECT_ERROR_CONTAINS(net->unregister_module("fc1"),
                        "TinyNet.unregister_module: no submodule named 'fc1' (submodules: 'fc2')");
  EXPECT_ERROR_CONTAINS(net->replace_module("fc9", wider),
                        "TinyNet.replace_module: no submodule named 'fc9'");
}

}  // namespace
}  // namespace minidl
