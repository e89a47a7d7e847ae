#pragma once
// nn::Sequential: modules applied one after another, each one's output the next one's input,
// as torch::nn::Sequential. Any module whose forward maps a Tensor to a Tensor can be an
// element (see nn/any_module.h). Elements are registered as children named "0", "1", ...,
// so their parameters are named "0.weight", "1.bias", ... as in PyTorch. forward calls each
// element as its holder would, between the element's forward hooks (see nn/module.h).
//
//   nn::Sequential mlp{nn::Linear(784, 64), nn::ReLU(), nn::Linear(64, 10)};
//   mlp->push_back(nn::Sigmoid());       // appends, named by its position ("3")
//   Tensor y = mlp->forward(x);
//   nn::LinearImpl& first = mlp->at<nn::LinearImpl>(0);
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/nn/any_module.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  SequentialImpl(std::initializer_list<AnyModule> modules);

  // Appends `module` under the name of its position ("0", "1", ...).
  void push_back(AnyModule module);
  // Appends `module` under `name` (PyTorch's Sequential(OrderedDict(...)) naming).
  void push_back(std::string name, AnyModule module);

  // Applies every element in order; an empty Sequential returns its input, as PyTorch's.
  Tensor forward(const Tensor& x);

  size_t size() const { return elements_.size(); }
  bool is_empty() const { return elements_.empty(); }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  // The element at `index` as its own class; an error when it is of another class.
  template <class ModuleType>
  ModuleType& at(size_t index) const {
    auto typed = std::dynamic_pointer_cast<ModuleType>(ptr(index));
    MINIDL_CHECK(typed != nullptr, "Sequential::at: element ", index, " is a ", ptr(index)->name(),
                 ", not the requested module class");
    return *typed;
  }
  auto begin() const { return elements_.begin(); }
  auto end() const { return elements_.end(); }

  void pretty_print(std::ostream& out) const override;

 private:
  std::vector<AnyModule> elements_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() = default;
  Sequential(std::initializer_list<AnyModule> modules)
      : ModuleHolder(std::make_shared<SequentialImpl>(modules)) {}
};

}  // namespace minidl::nn
