#include "minidl/core/autograd/saved_tensor.h"

#include <memory>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/node.h"
#include "minidl/core/error.h"

namespace minidl::autograd {

SavedTensor::SavedTensor(const Tensor& tensor, std::string op, Role role)
    : tensor_(tensor.defined() ? tensor.detach() : Tensor()),
      original_(role == Role::kInput && tensor.defined() && tensor.requires_grad() ? tensor
                                                                                   : Tensor()),
      is_output_(role == Role::kOutput),
      saved_version_(tensor.defined() ? tensor.version() : 0),
      op_(std::move(op)) {}

Tensor SavedTensor::get() const {
  MINIDL_CHECK(!tensor_.defined() || tensor_.version() == saved_version_, op_,
               " backward: a tensor of shape ", tensor_.sizes(),
               " saved for the gradient was modified by an in-place operation (it is at version ",
               tensor_.version(), ", expected version ", saved_version_, ")");
  if (!GradMode::is_enabled() || !tensor_.defined()) return tensor_;
  if (original_.defined()) return original_;
  if (is_output_) {
    Node* running = running_node();
    std::shared_ptr<Node> node = running != nullptr ? running->weak_from_this().lock() : nullptr;
    if (node) {
      // An op that saves its own output has that one output (its number is 0).
      MINIDL_INTERNAL_ASSERT(node->num_outputs() == 1, op_, " saved its output, but its node ",
                             node->name(), " has ", node->num_outputs(), " outputs");
      Tensor output = tensor_.detach();
      AutogradMeta& meta = output.unsafe_impl()->autograd_meta();
      meta.requires_grad = true;
      meta.grad_fn = std::move(node);
      return output;
    }
  }
  return tensor_;
}

}  // namespace minidl::autograd
