#pragma once
// The holder pattern of LibTorch's TORCH_MODULE: `MINIDL_MODULE(Linear)` defines `nn::Linear`,
// a std::shared_ptr wrapper around `nn::LinearImpl`, so that
//
//   nn::Linear fc(784, 10);        // constructs a LinearImpl(784, 10)
//   Tensor y = fc->forward(x);     // or fc(x)
//   nn::Linear alias = fc;         // copies alias the same module, as Tensors do
//   nn::Linear later{nullptr};     // empty until assigned (e.g. from register_module)
//
// A default-constructed holder constructs the module with its default constructor when it has
// one, and is empty otherwise. A holder converts to a std::shared_ptr of its module class or of
// a base (std::shared_ptr<Module>), so containers take holders and pointers alike.
//
// Calling the holder, fc(x), runs the module's forward hooks around forward when forward maps
// one Tensor to a Tensor (see Module's "forward hooks"); fc->forward(x) runs forward alone.
#include <concepts>
#include <cstddef>
#include <memory>
#include <ostream>
#include <type_traits>
#include <utility>

#include "minidl/core/error.h"
#include "minidl/core/tensor.h"

namespace minidl::nn {

// A call of `ModuleType`'s forward that forward hooks can wrap: one Tensor in, a Tensor out.
template <class ModuleType, class... Args>
concept TensorToTensorCall = sizeof...(Args) == 1 &&
                             (std::same_as<std::remove_cvref_t<Args>, Tensor> && ...) &&
                             requires(ModuleType& module, const Tensor& input) {
  { module.forward(input) } -> std::same_as<Tensor>;
};

template <class Contained>
class ModuleHolder {
 public:
  using ContainedType = Contained;

  ModuleHolder() {
    if constexpr (std::is_default_constructible_v<Contained>) impl_ = std::make_shared<Contained>();
  }
  ModuleHolder(std::nullptr_t) {}
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}

  // Forwards the arguments to Contained's constructor: nn::Conv2d conv(3, 64, 3).
  template <class Head, class... Tail>
  requires(!std::is_base_of_v<ModuleHolder, std::decay_t<Head>> &&
           !std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
           std::constructible_from<Contained, Head, Tail...>) explicit ModuleHolder(Head&& head,
                                                                                    Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Contained* operator->() const { return get(); }
  Contained& operator*() const { return *get(); }
  Contained* get() const {
    MINIDL_CHECK(impl_ != nullptr, "ModuleHolder: accessing an empty module holder (one ",
                 "constructed with nullptr, or without arguments for a module that needs ",
                 "them, and never assigned)");
    return impl_.get();
  }
  const std::shared_ptr<Contained>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  template <class Base>
  requires std::is_convertible_v<Contained*, Base*>
  operator std::shared_ptr<Base>() const { return impl_; }

  // Calls the module: fc(x) is fc->forward(x) between fc's forward hooks.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    Contained* module = get();
    if constexpr (TensorToTensorCall<Contained, Args...>) {
      return module->call_with_forward_hooks(
          args..., [module](const Tensor& input) { return module->forward(input); });
    } else {
      module->check_no_forward_hooks();
      return module->forward(std::forward<Args>(args)...);
    }
  }

  // Indexes the module: sequential[0] is (*sequential)[0].
  template <class Index>
  decltype(auto) operator[](Index&& index) const {
    return (*get())[std::forward<Index>(index)];
  }

 private:
  std::shared_ptr<Contained> impl_;
};

template <class Contained>
std::ostream& operator<<(std::ostream& out, const ModuleHolder<Contained>& holder) {
  return out << *holder;
}

}  // namespace minidl::nn

// Defines the holder `Name` for the module class `NameImpl` (in the current namespace).
#define MINIDL_MODULE(Name)                                     \
  class Name : public ::minidl::nn::ModuleHolder<Name##Impl> {  \
   public:                                                      \
    using ::minidl::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
