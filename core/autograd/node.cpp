#include "minidl/core/autograd/node.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"

namespace minidl::autograd {

namespace {

std::atomic<uint64_t> next_sequence_nr{0};

thread_local Node* running = nullptr;

// Makes `node` the running node for a scope, and restores the previous one (a backward run from
// inside another's, as a hook may start) when it ends, also by an exception.
class RunningNodeScope {
 public:
  explicit RunningNodeScope(Node* node) : previous_(running) { running = node; }
  ~RunningNodeScope() { running = previous_; }
  RunningNodeScope(const RunningNodeScope&) = delete;
  RunningNodeScope& operator=(const RunningNodeScope&) = delete;

 private:
  Node* previous_;
};

// A new tensor holding `t`'s values, dense in `format`.
Tensor copy_in_layout(const Tensor& t, MemoryFormat format) {
  Tensor copy = empty(t.sizes(), t.options(), format);
  copy.copy_(t);
  return copy;
}

// Moves each edge that holds the last reference to its node into `orphans`. The other edges
// stay: dropping them destroys nothing.
void take_last_references(std::vector<Edge>& edges, std::vector<std::shared_ptr<Node>>& orphans) {
  for (Edge& edge : edges)
    if (edge.node && edge.node.use_count() == 1) orphans.push_back(std::move(edge.node));
}

// Runs `hooks` (Tensor::register_hook) on `grad` in registration order, each on what the
// previous one left, and returns the gradient to use. `where` names the tensor in errors. The
// hooks are a copy, as PyTorch's snapshot: a hook that removes itself or adds another changes
// the next backward, not this one.
Tensor run_grad_hooks(GradHooks hooks, Tensor grad, const std::string& where) {
  for (const auto& [id, hook] : hooks) {
    Tensor replaced = hook(grad);
    if (!replaced.defined()) continue;
    MINIDL_CHECK(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype() &&
                     replaced.device() == grad.device(),
                 "register_hook: hook ", id, " on the gradient of ", where,
                 " must return a gradient like the one it was given (shape ", grad.sizes(),
                 ", dtype ", grad.dtype(), " on ", grad.device(), ") or an undefined tensor, ",
                 "but returned shape ", replaced.sizes(), ", dtype ", replaced.dtype(), " on ",
                 replaced.device());
    grad = std::move(replaced);
  }
  return grad;
}

// Adds `grad` to leaf.grad().
void accumulate_into(Tensor& leaf, const Tensor& grad) {
  MINIDL_CHECK(grad.sizes() == leaf.sizes(), "backward: gradient for a leaf of shape ",
               leaf.sizes(), " has shape ", grad.sizes());
  Tensor current = leaf.grad();
  if (!current.defined()) {
    // Own the gradient, laid out as the leaf is (a channels-last leaf gets a channels-last
    // .grad, as in PyTorch): a private temporary in that layout is taken as is; a tensor the
    // graph may still alias (e.g. add's backward passes the same gradient to both inputs) or
    // one in another layout is copied.
    const MemoryFormat format = leaf.suggest_memory_format();
    if (GradMode::is_enabled()) {
      // create_graph: .grad keeps the gradient's graph, through a recorded copy (PyTorch clones
      // it too), so that a later change of .grad in place cannot reach the graph's tensors.
      // (A channels-last gradient already in layout is copied twice: a rare case.)
      Tensor owned = grad.contiguous(format);
      if (owned.is_same(grad)) owned = grad.clone().contiguous(format);
      leaf.set_grad(owned);
      return;
    }
    const bool private_temporary = grad.impl_ptr().use_count() == 1 &&
                                   grad.storage().use_count() == 1 && grad.is_contiguous(format);
    leaf.set_grad(private_temporary ? grad : copy_in_layout(grad, format));
  } else if (GradMode::is_enabled()) {
    // create_graph: the sum is a new tensor with a graph, never an in-place change of a .grad
    // that a graph may hold (PyTorch replaces .grad out of place then too).
    leaf.set_grad(current.add(grad));
  } else {
    current.add_(grad);
  }
}

}  // namespace

Node* running_node() { return running; }

Node::Node(std::string name, uint32_t num_outputs)
    : grad_hooks(num_outputs),
      name_(std::move(name)),
      sequence_nr_(next_sequence_nr++),
      num_outputs_(num_outputs) {}

// Note [Releasing deep graphs]
// A node owns the nodes its gradient flows to (`next`), so the graph of `y = y + 1` repeated
// N times is a chain of N nodes that only the last one holds. Destroying it by plain
// shared_ptr recursion nests one destructor per node and overflowed the 8 MiB stack at about
// 175,000 nodes. As PyTorch's deleteNode does, a dying node instead moves the edges it is the
// last owner of into a work list, and the loop below destroys those nodes one at a time, each
// after taking its own last-owner edges away: a node destroyed here finds none left, so the
// nesting is at most two destructors deep whatever the graph's depth. Nodes that something
// else still owns (a tensor's grad_fn, another path of the graph) are left to that owner.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> orphans;
  take_last_references(next, orphans);
  while (!orphans.empty()) {
    std::shared_ptr<Node> node = std::move(orphans.back());
    orphans.pop_back();
    // Saved state first: a backward closure may hold a tensor whose grad_fn is one of
    // node's successors, which then becomes solely owned by node's edge and is taken too.
    node->release_saved();
    take_last_references(node->next, orphans);
  }  // `node` is destroyed at the end of each iteration, with no last-owner edges left
}

std::vector<Tensor> Node::apply(std::vector<Tensor> grad_outputs) {
  MINIDL_CHECK(!released_, "backward: trying to backward through the graph a second time (", name_,
               " was already freed); call backward(gradient, /*retain_graph=*/true) the "
               "first time if you need to backward twice");
  MINIDL_INTERNAL_ASSERT(grad_outputs.size() == num_outputs_, name_, " was given ",
                         grad_outputs.size(), " gradients for ", num_outputs_, " outputs");
  const RunningNodeScope scope(this);
  // Without hooks a gradient is passed on untouched: AccumulateGrad takes over a gradient no
  // one else references instead of copying it.
  for (uint32_t i = 0; i < num_outputs_; ++i) {
    if (grad_hooks[i].empty() || !grad_outputs[i].defined()) continue;
    const std::string where = num_outputs_ == 1 ? "the output of " + name_
                                                : "output " + std::to_string(i) + " of " + name_;
    grad_outputs[i] = run_grad_hooks(grad_hooks[i], std::move(grad_outputs[i]), where);
  }
  std::vector<Tensor> grads = backward(std::move(grad_outputs));
  MINIDL_INTERNAL_ASSERT(grads.size() == next.size(), name_, " returned ", grads.size(),
                         " gradients for ", next.size(), " inputs");
  for (size_t i = 0; i < grads.size() && i < input_sizes.size(); ++i) {
    MINIDL_INTERNAL_ASSERT(!grads[i].defined() || grads[i].sizes() == input_sizes[i], name_,
                           " returned a gradient of shape ", grads[i].sizes(), " for input ", i,
                           " of shape ", input_sizes[i]);
  }
  return grads;
}

std::vector<Tensor> Node::apply(const Tensor& grad_output) {
  return apply(std::vector<Tensor>{grad_output});
}

void Node::release() {
  released_ = true;
  release_saved();
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::backward(std::vector<Tensor> grad_outputs) {
  const Tensor& grad_output = grad_outputs[0];
  Tensor leaf(leaf_);
  const auto& hooks = leaf_->autograd_meta().grad_hooks;
  if (hooks.empty()) {
    accumulate_into(leaf, grad_output);
  } else {
    accumulate_into(
        leaf, run_grad_hooks(hooks, grad_output, "a leaf of shape " + shape_str(leaf.sizes())));
  }
  for (const auto& [id, hook] : leaf_->autograd_meta().post_accumulate_grad_hooks) hook(leaf);
  return {};
}

}  // namespace minidl::autograd
