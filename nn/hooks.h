#pragma once
// Forward hooks on modules, as PyTorch's register_forward_pre_hook and register_forward_hook,
// and RemovableHandle, which takes one away again (see Module's "forward hooks" section).
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl::nn {

class Module;

// Runs before forward with the module and its input; a tensor returned replaces the input.
using ForwardPreHook = std::function<std::optional<Tensor>(Module& module, const Tensor& input)>;
// Runs after forward with the module, its input (as the pre-hooks left it) and its output; a
// tensor returned replaces the output.
using ForwardHook =
    std::function<std::optional<Tensor>(Module& module, const Tensor& input, const Tensor& output)>;

// One module's forward hooks, each kind in registration order, every hook under an id unique
// within the module.
struct ForwardHookLists {
  std::vector<std::pair<int, ForwardPreHook>> pre_hooks;
  std::vector<std::pair<int, ForwardHook>> hooks;
  int next_id = 0;

  bool is_empty() const { return pre_hooks.empty() && hooks.empty(); }
  void remove(int id) {
    std::erase_if(pre_hooks, [id](const auto& entry) { return entry.first == id; });
    std::erase_if(hooks, [id](const auto& entry) { return entry.first == id; });
  }
};

// Removes the hook it was returned for. It refers to the module's hooks weakly: removing twice,
// or after the module is gone, does nothing. Dropping the handle keeps the hook, as PyTorch's.
class RemovableHandle {
 public:
  RemovableHandle() = default;  // refers to no hook
  RemovableHandle(std::weak_ptr<ForwardHookLists> hooks, int id)
      : hooks_(std::move(hooks)), id_(id) {}

  void remove() {
    if (std::shared_ptr<ForwardHookLists> hooks = hooks_.lock()) hooks->remove(id_);
    hooks_.reset();
  }
  int id() const { return id_; }

 private:
  std::weak_ptr<ForwardHookLists> hooks_;
  int id_ = -1;
};

}  // namespace minidl::nn
