#include "core/autograd/node.h"

#include <atomic>

#include "core/error.h"

namespace minidl::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
}

Node::Node(std::string name) : name_(std::move(name)), sequence_nr_(next_sequence_nr++) {}

std::vector<Tensor> Node::apply(const Tensor& grad_output) {
  MINIDL_CHECK(!released_, "backward: trying to backward through the graph a second time (",
               name_, " was already freed); call backward(gradient, /*retain_graph=*/true) the "
               "first time if you need to backward twice");
  std::vector<Tensor> grads = backward(grad_output);
  MINIDL_INTERNAL_ASSERT(grads.size() == next.size(), name_, " returned ", grads.size(),
                         " gradients for ", next.size(), " inputs");
  for (size_t i = 0; i < grads.size() && i < input_sizes.size(); ++i) {
    MINIDL_INTERNAL_ASSERT(!grads[i].defined() || grads[i].sizes() == input_sizes[i], name_,
                           " returned a gradient of shape ", grads[i].sizes(), " for input ", i,
                           " of shape ", input_sizes[i]);
  }
  return grads;
}

void Node::release() {
  released_ = true;
  release_saved();
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::backward(const Tensor& grad_output) {
  Tensor leaf(leaf_);
  MINIDL_CHECK(grad_output.sizes() == leaf.sizes(), "backward: gradient for a leaf of shape ",
               leaf.sizes(), " has shape ", grad_output.sizes());
  Tensor current = leaf.grad();
  if (!current.defined()) {
    // Own the gradient: a tensor the graph may still alias (e.g. add's backward passes the
    // same gradient to both inputs) is copied, a private temporary is taken as is.
    const bool private_temporary = grad_output.impl_ptr().use_count() == 1 &&
                                   grad_output.storage().use_count() == 1 &&
                                   grad_output.is_contiguous();
    leaf.set_grad(private_temporary ? grad_output : grad_output.clone());
  } else {
    current.add_(grad_output);
  }
  for (const auto& [id, hook] : leaf_->autograd_meta().post_accumulate_grad_hooks) hook(leaf);
  return {};
}

}  // namespace minidl::autograd
