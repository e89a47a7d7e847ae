#pragma once
// nn::ModuleDict: modules under string keys, in insertion order, as torch::nn::ModuleDict. Each
// is registered as a child under its key, so a dict registered as "heads" names its parameters
// "heads.<key>.weight", ... as PyTorch does. A ModuleDict has no forward: calling it does not
// compile.
//
//   nn::ModuleDict heads({{"digits", nn::Linear(64, 10)}, {"parity", nn::Linear(64, 2)}});
//   heads->insert("sign", nn::Linear(64, 2));          // heads["sign"] = ... in PyTorch
//   Tensor logits = heads->at<nn::LinearImpl>("digits").forward(features);
//   for (const auto& item : *heads) std::cout << item.key() << ": " << *item.value() << "\n";
//
// Adding a key that is present replaces its module in place, keeping the key's position (as a
// Python dict); pop removes one.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/ordered_dict.h"

namespace minidl::nn {

class ModuleDictImpl : public Module {
 public:
  using Item = OrderedDict<std::string, std::shared_ptr<Module>>::Item;

  ModuleDictImpl() : Module("ModuleDict") {}
  explicit ModuleDictImpl(
      const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules);

  // Adds `module` (a holder or a std::shared_ptr) under `key`, or replaces the module under
  // `key` keeping its position.
  void insert(const std::string& key, std::shared_ptr<Module> module);
  // insert() for each pair, in order.
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  void update(const ModuleDictImpl& other);

  bool contains(const std::string& key) const { return modules_.contains(key); }
  // The module under `key`; a missing key is an error naming the keys present.
  std::shared_ptr<Module> operator[](const std::string& key) const { return at(key); }
  std::shared_ptr<Module> at(const std::string& key) const;
  // The module under `key` as its own class (LinearImpl, not Linear); an error naming the
  // module's class when it is another.
  template <class ModuleType>
  std::shared_ptr<ModuleType> ptr(const std::string& key) const {
    static_assert(std::is_base_of_v<Module, ModuleType>,
                  "ModuleDict::ptr<T>: T is the module class (nn::LinearImpl), not its holder");
    std::shared_ptr<Module> module = at(key);
    auto typed = std::dynamic_pointer_cast<ModuleType>(module);
    MINIDL_CHECK(typed != nullptr, "ModuleDict::ptr: the module under '", key, "' is a ",
                 module->name(), ", not the requested module class");
    return typed;
  }
  template <class ModuleType>
  ModuleType& at(const std::string& key) const {
    return *ptr<ModuleType>(key);
  }
  // Removes the module under `key` and returns it; a missing key is an error.
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();

  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.is_empty(); }
  std::vector<std::string> keys() const { return modules_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return modules_.values(); }
  const std::vector<Item>& items() const { return modules_.items(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  void check_key(const std::string& key, const char* op) const;

  OrderedDict<std::string, std::shared_ptr<Module>> modules_{"ModuleDict key"};
};

class ModuleDict : public ModuleHolder<ModuleDictImpl> {
 public:
  using ModuleHolder<ModuleDictImpl>::ModuleHolder;
  ModuleDict() = default;
  // nn::ModuleDict dict({{"conv", nn::Conv2d(1, 4, 3)}, {"act", nn::ReLU()}}).
  ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules)
      : ModuleHolder(std::make_shared<ModuleDictImpl>(
            std::vector<std::pair<std::string, std::shared_ptr<Module>>>(modules))) {}
};

}  // namespace minidl::nn
