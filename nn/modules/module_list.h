#pragma once
// nn::ModuleList: modules held in a list, as torch::nn::ModuleList, for a model that owns a
// varying number of layers and calls them in its own forward. The elements are registered as
// children named by their position ("0", "1", ...), so a list registered as "layers" names its
// parameters "layers.0.weight", "layers.1.bias", ... as PyTorch does. A ModuleList has no
// forward: calling it does not compile.
//
//   struct MlpImpl : nn::Module {
//     MlpImpl() {
//       layers = register_module("layers", nn::ModuleList(nn::Linear(4, 8), nn::Linear(8, 2)));
//     }
//     Tensor forward(Tensor x) {
//       for (size_t i = 0; i < layers->size(); ++i)
//         x = relu(layers->at<nn::LinearImpl>(i).forward(x));
//       return x;
//     }
//     nn::ModuleList layers{nullptr};
//   };
//
// Elements are std::shared_ptr<Module>; ptr<T>(i) and at<T>(i) give an element as its own class
// (LinearImpl, not the holder Linear). Its forward called so skips its forward hooks, as
// module.forward(x) in PyTorch; to run them, call it through a holder:
// nn::Linear(layers->ptr<nn::LinearImpl>(i))(x).
#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  // nn::ModuleList(nn::Linear(4, 8), nn::ReLU(), std::make_shared<MyBlockImpl>()).
  template <class... Modules>
  requires(sizeof...(Modules) > 0 && (std::is_convertible_v<Modules, std::shared_ptr<Module>> &&
                                      ...)) explicit ModuleListImpl(Modules&&... modules)
      : ModuleListImpl() {
    (push_back(std::forward<Modules>(modules)), ...);
  }

  // Appends `module` (a holder or a std::shared_ptr) under the name of its position.
  void push_back(std::shared_ptr<Module> module);
  void append(std::shared_ptr<Module> module) { push_back(std::move(module)); }
  // Appends every module of `modules` (another ModuleList, a vector of modules, ...).
  template <class Container>
  void extend(const Container& modules) {
    // Collected first: extending a list by itself must not iterate what it appends.
    std::vector<std::shared_ptr<Module>> appended(std::begin(modules), std::end(modules));
    for (std::shared_ptr<Module>& module : appended) push_back(std::move(module));
  }
  // Puts `module` at `index` (0 to size()), moving the later elements up one name.
  void insert(size_t index, std::shared_ptr<Module> module);

  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> at(size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  // The element at `index` as its own class (LinearImpl, not Linear); an error naming the
  // element's class when it is another.
  template <class ModuleType>
  std::shared_ptr<ModuleType> ptr(size_t index) const {
    static_assert(std::is_base_of_v<Module, ModuleType>,
                  "ModuleList::ptr<T>: T is the module class (nn::LinearImpl), not its holder");
    std::shared_ptr<Module> element = ptr(index);
    auto typed = std::dynamic_pointer_cast<ModuleType>(element);
    MINIDL_CHECK(typed != nullptr, "ModuleList::ptr: element ", index, " is a ", element->name(),
                 ", not the requested module class");
    return typed;
  }
  template <class ModuleType>
  ModuleType& at(size_t index) const {
    return *ptr<ModuleType>(index);
  }

  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::shared_ptr<Module> checked(std::shared_ptr<Module> module, const char* op) const;

  std::vector<std::shared_ptr<Module>> modules_;
};

class ModuleList : public ModuleHolder<ModuleListImpl> {
 public:
  using ModuleHolder<ModuleListImpl>::ModuleHolder;
};

}  // namespace minidl::nn
