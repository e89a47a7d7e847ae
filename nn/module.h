#pragma once
// nn::Module: the base of every layer and model, as LibTorch's torch::nn::Module.
//
// A module owns named parameters (leaf tensors that require grad), named buffers (state that
// is saved but not trained, such as batch norm's running statistics) and named child modules,
// each kept in registration order. Every traversal (parameters(), named_buffers(),
// state_dict(), modules(), ...) is a pre-order walk: a module's own entries first, then each
// child's, in registration order, so names read like PyTorch's state_dict keys
// ("layer1.0.conv1.weight") and the optimizer, checkpoints and data parallelism all see the
// same order.
//
// Modules are held by std::shared_ptr, usually through a holder (see nn/module_holder.h):
// `nn::Linear fc(784, 10)` makes a LinearImpl; copies of the holder alias the same module.
// A module itself is not copyable.
//
// A subclass registers what it owns in its constructor and defines forward():
//
//   struct NetImpl : nn::Module {
//     NetImpl() {
//       fc1 = register_module("fc1", nn::Linear(784, 64));
//       fc2 = register_module("fc2", nn::Linear(64, 10));
//     }
//     Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
//     nn::Linear fc1{nullptr}, fc2{nullptr};
//   };
//   MINIDL_MODULE(Net);
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/nn/hooks.h"
#include "minidl/nn/ordered_dict.h"

namespace minidl::nn {

template <class Contained>
class ModuleHolder;

class Module : public std::enable_shared_from_this<Module> {
 public:
  using NamedTensors = OrderedDict<std::string, Tensor>;
  using NamedModules = OrderedDict<std::string, std::shared_ptr<Module>>;

  // `name` is what printing and error messages call this module. Left empty, it is the
  // class name without namespaces and without a trailing "Impl" (NetImpl prints as "Net").
  explicit Module(std::string name = {});
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const;

  // ---- registration (in a subclass's constructor) ----
  // Registers `tensor` (a defined leaf tensor) as the parameter `name`, setting its
  // requires_grad. Returns the tensor (an alias), to store in a member.
  Tensor register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor register_buffer(std::string name, Tensor tensor);
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name,
                                              std::shared_ptr<ModuleType> module) {
    register_child(std::move(name), module);
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name,
                                              const ModuleHolder<ModuleType>& holder) {
    return register_module(std::move(name), holder.ptr());
  }

  // ---- submodules after construction (as LibTorch's) ----
  // Puts `module` in place of the submodule `name`, keeping its position in every traversal.
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name,
                                             std::shared_ptr<ModuleType> module) {
    replace_child(name, module);
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name,
                                             const ModuleHolder<ModuleType>& holder) {
    return replace_module(name, holder.ptr());
  }
  // Removes the submodule `name` (its parameters leave every traversal).
  void unregister_module(const std::string& name);

  // ---- traversal ----
  // Parameters of this module (and of all descendants when `recurse`), each tensor once even
  // when several modules share it (the first name wins), as PyTorch's named_parameters().
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  NamedModules named_children() const;
  // This module (when include_self; it must then be held by a shared_ptr) and every
  // descendant, pre-order, each module once. Names are dotted paths ("" for this module).
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  NamedModules named_modules(const std::string& prefix = {}, bool include_self = true) const;

  // ---- state ----
  // Parameters and buffers under their dotted names, per module its parameters then its
  // buffers, as PyTorch's state_dict(). The tensors alias the module's.
  NamedTensors state_dict() const;
  // Copies each tensor of `state` into the tensor of the same name, in place (keeping the
  // module's device and dtype). Every shape is checked before anything is copied, so a failed
  // load changes nothing. Missing and unexpected keys are errors when `strict`, and ignored
  // otherwise; a shape mismatch is always an error. The error lists every problem.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // ---- mode ----
  // Sets training mode on this module and every descendant (dropout and batch norm read it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return is_training_; }

  // ---- placement ----
  // Moves every parameter and buffer (and gradients) in place: the tensors keep their
  // identity, so members, optimizers and hooks that alias them see the new data, as LibTorch's
  // Module::to. Parameters stay leaves that require grad. to(dtype) converts floating-point
  // tensors only (batch norm's int64 num_batches_tracked stays int64), as PyTorch.
  void to(Device device);
  void to(DType dtype);
  void to(Device device, DType dtype);

  // Clears the gradient of every parameter: drops it (set_to_none, the default, as PyTorch
  // 2.x) or fills it with zeros.
  void zero_grad(bool set_to_none = true);

  // Calls `fn` on this module, then on every descendant, pre-order (as LibTorch's apply).
  void apply(const std::function<void(Module&)>& fn);
  // The same, with each module's dotted name ("" for this module).
  void apply(const std::function<void(const std::string& name, Module&)>& fn);

  // One line describing this module alone, e.g. "Linear(in_features=784, out_features=10,
  // bias=true)"; operator<< prints the whole tree around it. Layers override it.
  virtual void pretty_print(std::ostream& out) const;

  // ---- forward hooks (as PyTorch's, for a forward that maps one Tensor to a Tensor) ----
  // Calling the module runs them: through its holder (`fc(x)`), as an element of a Sequential,
  // or through an AnyModule (and so DistributedDataParallel); a direct `fc->forward(x)` does
  // not, as PyTorch's `module.forward(x)` does not. The forward pre-hooks run first, in
  // registration order, each as hook(module, input); one that returns a defined Tensor replaces
  // the input (return nothing, std::nullopt or an undefined Tensor to keep it). Then forward
  // runs on the input they left, then the forward hooks, as hook(module, input, output), each
  // of which may replace the output likewise. Each list runs from a copy taken when its turn
  // comes, as PyTorch's runs from a snapshot: a hook that adds or removes hooks changes the
  // lists from then on, not the one running. A module that has hooks and is called through its
  // holder with any other signature raises an error instead of skipping them. Hooks belong to
  // this module object (modules are not copied or cloned). Returns a handle for removal.
  template <class Hook>
  RemovableHandle register_forward_pre_hook(Hook hook) {
    static_assert(std::is_invocable_v<Hook&, Module&, const Tensor&>,
                  "register_forward_pre_hook: the hook is called as hook(module, input)");
    using Result = std::invoke_result_t<Hook&, Module&, const Tensor&>;
    if constexpr (std::is_void_v<Result>) {
      return add_forward_pre_hook(
          [hook = std::move(hook)](Module& module, const Tensor& input) mutable {
            hook(module, input);
            return std::optional<Tensor>();
          });
    } else {
      static_assert(std::is_convertible_v<Result, std::optional<Tensor>>,
                    "register_forward_pre_hook: the hook returns void, a Tensor or an "
                    "std::optional<Tensor>");
      return add_forward_pre_hook(ForwardPreHook(std::move(hook)));
    }
  }
  template <class Hook>
  RemovableHandle register_forward_hook(Hook hook) {
    static_assert(std::is_invocable_v<Hook&, Module&, const Tensor&, const Tensor&>,
                  "register_forward_hook: the hook is called as hook(module, input, output)");
    using Result = std::invoke_result_t<Hook&, Module&, const Tensor&, const Tensor&>;
    if constexpr (std::is_void_v<Result>) {
      return add_forward_hook([hook = std::move(hook)](Module& module, const Tensor& input,
                                                       const Tensor& output) mutable {
        hook(module, input, output);
        return std::optional<Tensor>();
      });
    } else {
      static_assert(std::is_convertible_v<Result, std::optional<Tensor>>,
                    "register_forward_hook: the hook returns void, a Tensor or an "
                    "std::optional<Tensor>");
      return add_forward_hook(ForwardHook(std::move(hook)));
    }
  }
  bool has_forward_hooks() const { return forward_hooks_ && !forward_hooks_->is_empty(); }

  // What calling the module does (its holder, Sequential and AnyModule call this): the forward
  // pre-hooks on `input`, `forward` on what they leave, then the forward hooks on its output.
  template <class Forward>
  Tensor call_with_forward_hooks(const Tensor& input, const Forward& forward) {
    if (!has_forward_hooks()) return forward(input);
    const Tensor hooked_input = run_forward_pre_hooks(input);
    return run_forward_hooks(hooked_input, forward(hooked_input));
  }
  // Raises when this module has forward hooks: its holder calls this before a forward of
  // another signature than Tensor -> Tensor, which hooks cannot wrap.
  void check_no_forward_hooks() const;

  // ---- CUDA graphs ----
  // Whether a training step through this module alone (not its children) may be captured in a
  // CUDA graph and replayed: a module that draws random numbers each step says false, because a
  // replay repeats the captured step's draws (core/cuda/graph.h). The Trainer captures a step
  // only when every module of the model says true; a user's module that draws its own random
  // numbers overrides this.
  virtual bool is_cuda_graph_safe() const { return true; }

 private:
  void register_child(std::string name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  RemovableHandle add_forward_pre_hook(ForwardPreHook hook);
  RemovableHandle add_forward_hook(ForwardHook hook);
  Tensor run_forward_pre_hooks(const Tensor& input);
  Tensor run_forward_hooks(const Tensor& input, Tensor output);
  void check_new_name(const std::string& name, const char* what) const;
  void collect_named_modules(const std::string& prefix, NamedModules& out,
                             std::vector<const Module*>& seen) const;
  NamedTensors collect_named(bool recurse, bool want_parameters) const;

  NamedTensors parameters_{"Parameter"};
  NamedTensors buffers_{"Buffer"};
  NamedModules children_{"Submodule"};
  bool is_training_ = true;
  // Created by the first hook; handles refer to it weakly.
  std::shared_ptr<ForwardHookLists> forward_hooks_;
  mutable std::once_flag name_once_;
  mutable std::string name_;
};

// Prints the module tree: one line per module, children indented under their parent, each
// with its parameter count and the shapes of its own parameters and buffers.
std::ostream& operator<<(std::ostream& out, const Module& module);

// 61706 -> "61,706".
std::string format_count(int64_t count);

}  // namespace minidl::nn
