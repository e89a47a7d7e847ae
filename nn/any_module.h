#pragma once
// AnyModule: any module whose forward maps a Tensor to a Tensor, with its type erased, so
// that nn::Sequential can hold a Linear next to a ReLU next to a user's own block. Built
// implicitly from a holder (nn::Linear) or a std::shared_ptr to the module class; copies share
// the module.
#include <concepts>
#include <functional>
#include <memory>
#include <utility>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"

namespace minidl::nn {

// A module class with `Tensor forward(const Tensor&)` (or anything that takes a Tensor and
// returns something convertible to one).
template <class ModuleType>
concept TensorToTensorModule = std::derived_from<ModuleType, Module> &&
    requires(ModuleType& module, const Tensor& x) {
  { module.forward(x) } -> std::convertible_to<Tensor>;
};

class AnyModule {
 public:
  template <TensorToTensorModule ModuleType>
  AnyModule(std::shared_ptr<ModuleType> module)
      : module_(checked(module)), forward_([typed = std::move(module)](const Tensor& x) -> Tensor {
          return typed->call_with_forward_hooks(
              x, [&typed](const Tensor& input) -> Tensor { return typed->forward(input); });
        }) {}

  template <TensorToTensorModule ModuleType>
  AnyModule(const ModuleHolder<ModuleType>& holder) : AnyModule(holder.ptr()) {}

  // The module's forward, between its forward hooks (Module::register_forward_hook).
  Tensor forward(const Tensor& x) const { return forward_(x); }
  const std::shared_ptr<Module>& ptr() const { return module_; }
  // The module as its own class, or null when it is of another class.
  template <class ModuleType>
  std::shared_ptr<ModuleType> ptr_as() const {
    return std::dynamic_pointer_cast<ModuleType>(module_);
  }

 private:
  template <class ModuleType>
  static std::shared_ptr<Module> checked(const std::shared_ptr<ModuleType>& module) {
    MINIDL_CHECK(module != nullptr, "AnyModule: expected a module, got an empty holder or null ",
                 "pointer");
    return module;
  }

  std::shared_ptr<Module> module_;
  std::function<Tensor(const Tensor&)> forward_;
};

}  // namespace minidl::nn
