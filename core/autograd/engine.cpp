#include "minidl/core/autograd/engine.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/node.h"
#include "minidl/core/error.h"
#include "minidl/core/profiler.h"

namespace minidl::autograd {

namespace {

// The nodes reachable from `roots`, and for each the nodes with an edge into it.
struct GraphShape {
  std::unordered_set<Node*> nodes;
  std::unordered_map<Node*, std::vector<Node*>> parents;
};

GraphShape explore(const std::vector<Node*>& roots) {
  GraphShape shape;
  std::vector<Node*> stack;
  for (Node* root : roots)
    if (shape.nodes.insert(root).second) stack.push_back(root);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next) {
      if (!next) continue;
      shape.parents[next.get()].push_back(node);
      if (shape.nodes.insert(next.get()).second) stack.push_back(next.get());
    }
  }
  return shape;
}

// The nodes from which some node of `targets` can be reached (the targets included): the only
// ones whose gradients autograd::grad needs. Walks the parent edges, in a loop for deep graphs.
std::unordered_set<Node*> nodes_leading_to(const std::unordered_set<Node*>& targets,
                                           const GraphShape& shape) {
  std::unordered_set<Node*> needed;
  std::vector<Node*> stack;
  for (Node* target : targets)
    if (shape.nodes.count(target) != 0 && needed.insert(target).second) stack.push_back(target);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    auto parents = shape.parents.find(node);
    if (parents == shape.parents.end()) continue;
    for (Node* parent : parents->second)
      if (needed.insert(parent).second) stack.push_back(parent);
  }
  return needed;
}

// Number of incoming edges of every node reachable from `roots`.
std::unordered_map<Node*, int> count_dependencies(const std::vector<Node*>& roots) {
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (Node* root : roots) {
    dependencies.emplace(root, 0);
    if (seen.insert(root).second) stack.push_back(root);
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next) {
      if (!next) continue;
      ++dependencies[next.get()];
      if (seen.insert(next.get()).second) stack.push_back(next.get());
    }
  }
  return dependencies;
}

// The callbacks queued during the backward pass running on this thread (null outside one).
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;

// Makes `callbacks` the queue of this thread's backward pass, and restores the previous one
// (a backward pass started from a hook) when the pass ends, also by an exception.
class CallbackQueueScope {
 public:
  explicit CallbackQueueScope(std::vector<std::function<void()>>* callbacks)
      : previous_(queued_callbacks) {
    queued_callbacks = callbacks;
  }
  ~CallbackQueueScope() { queued_callbacks = previous_; }
  CallbackQueueScope(const CallbackQueueScope&) = delete;
  CallbackQueueScope& operator=(const CallbackQueueScope&) = delete;

 private:
  std::vector<std::function<void()>>* previous_;
};

// What autograd::grad collects at an input's node: the gradient, and the hooks to run on it.
struct CapturedInput {
  Tensor grad;
  const std::vector<std::pair<int, GradHook>>* hooks = nullptr;
};

struct LaterFirst {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// The gradient to start from at `root`: `gradient`, checked, or ones for a one-element root.
Tensor initial_gradient(const Tensor& root, const Tensor& gradient, const char* op) {
  if (!gradient.defined()) {
    MINIDL_CHECK(root.numel() == 1, op, ": a gradient can be created implicitly only for ",
                 "one-element outputs; pass a gradient for the output of shape ", root.sizes());
    return ones_like(root);
  }
  MINIDL_CHECK(gradient.sizes() == root.sizes() && gradient.dtype() == root.dtype() &&
                   gradient.device() == root.device(),
               op, ": expected a gradient of shape ", root.sizes(), ", dtype ", root.dtype(),
               " on ", root.device(), ", got shape ", gradient.sizes(), ", dtype ",
               gradient.dtype(), " on ", gradient.device());
  return gradient;
}

// The gradient an autograd::grad input is given when its node does not run: `grad` after the
// input's own hooks (Tensor::register_hook), as PyTorch runs a captured tensor's pre-hooks.
// A node that runs takes the raw gradient instead, and applies the hooks itself for what flows
// on (Node::apply, whose check of a hook's result node.cpp's run_grad_hooks makes as here).
Tensor hooked_capture(const CapturedInput& input, Tensor grad) {
  if (!grad.defined() || input.hooks == nullptr) return grad;
  for (const auto& [id, hook] : *input.hooks) {
    Tensor replaced = hook(grad);
    if (!replaced.defined()) continue;
    MINIDL_CHECK(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype() &&
                     replaced.device() == grad.device(),
                 "register_hook: hook ", id, " on the gradient of an autograd::grad input ",
                 "must return a gradient like the one it was given (shape ", grad.sizes(),
                 ", dtype ", grad.dtype(), " on ", grad.device(), ") or an undefined tensor, ",
                 "but returned shape ", replaced.sizes(), ", dtype ", replaced.dtype(), " on ",
                 replaced.device());
    grad = std::move(replaced);
  }
  return grad;
}

// Makes grad mode `enabled` for a scope, and restores the previous mode when it ends.
class GradModeScope {
 public:
  explicit GradModeScope(bool enabled) : previous_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~GradModeScope() { GradMode::set_enabled(previous_); }
  GradModeScope(const GradModeScope&) = delete;
  GradModeScope& operator=(const GradModeScope&) = delete;

 private:
  bool previous_;
};

// Note [Double backward]
// With create_graph the pass runs with grad mode on, so that the ops a backward formula calls
// record, and SavedTensor::get() gives tensors with their place in the graph: the gradients
// come out with a graph of their own (PyTorch's create_graph). Only the nodes whose op declared
// DoubleBackward::kSupported compute their gradients that way; another (a formula that calls a
// raw kernel) would give a gradient silently cut off from the graph. Each gradient of such a
// node is therefore given a graph of one "guard" node instead, whose backward raises "double
// backward of <op> is not supported". The guard's edges are those of the node (the inputs the
// true second derivative would reach) and of the incoming gradient, so a later backward or
// autograd::grad that needs the gradient's derivative reaches the guard and fails clearly,
// while a pass that never differentiates the gradient is not affected (as in PyTorch, whose
// ops without a double-backward formula fail at the second backward too).
Tensor guarded_gradient(const Node& node, const Tensor& grad, const Tensor& grad_output) {
  const std::string op = node.name();
  auto guard = std::make_shared<FunctionNode>(op, [op](const Tensor&) -> std::vector<Tensor> {
    MINIDL_CHECK(false, "double backward of ", op, " is not supported: the gradient it gave in ",
                 "a backward pass with create_graph=true cannot be differentiated again (its ",
                 "backward formula is not differentiable yet)");
    return {};
  });
  guard->next = node.next;
  guard->input_sizes = node.input_sizes;
  guard->next.push_back(gradient_edge(grad_output));
  guard->input_sizes.push_back(grad_output.sizes());
  Tensor guarded = grad.detach();
  AutogradMeta& meta = guarded.unsafe_impl()->autograd_meta();
  meta.requires_grad = true;
  meta.grad_fn = std::move(guard);
  return guarded;
}

// One backward pass from `roots` (seeded with `root_grads`). Without `captures` every reachable
// node runs, as for Tensor::backward. With them (autograd::grad) only the nodes that lead to a
// captured node run, and the complete gradient arriving at each captured node is stored in
// `captures` (an AccumulateGrad node is captured, never run).
void run_backward(const std::vector<Node*>& roots, std::vector<Tensor> root_grads,
                  std::unordered_map<Node*, CapturedInput>* captures, bool retain_graph,
                  bool create_graph) {
  const GradModeScope grad_mode(create_graph);  // see Note [Double backward]
  amp::NoAutocastGuard no_autocast;             // each backward runs in its forward's dtypes
  std::vector<std::function<void()>> callbacks;
  CallbackQueueScope callback_scope(&callbacks);

  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> needed;  // with captures: the nodes that take part
  if (captures == nullptr) {
    dependencies = count_dependencies(roots);
  } else {
    const GraphShape shape = explore(roots);
    std::unordered_set<Node*> targets;
    for (const auto& [node, grad] : *captures) targets.insert(node);
    needed = nodes_leading_to(targets, shape);
    for (Node* node : needed) {
      dependencies.emplace(node, 0);
      for (const auto& next : node->next)
        if (next && needed.count(next.get()) != 0) ++dependencies[next.get()];
    }
  }
  const auto takes_part = [&](Node* node) {
    return captures == nullptr || needed.count(node) != 0;
  };

  std::unordered_map<Node*, Tensor> pending;
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!takes_part(roots[i])) continue;
    Tensor& slot = pending[roots[i]];
    if (!slot.defined() && dependencies[roots[i]] == 0) ready.push(roots[i]);
    slot = slot.defined() ? slot.add(root_grads[i]) : std::move(root_grads[i]);
  }
  std::vector<Node*> visited;

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    Tensor grad_output = std::move(pending[node]);
    pending.erase(node);
    bool run = true;
    if (captures != nullptr) {
      // A captured node runs only when the gradient must go on to another captured node.
      run = dynamic_cast<AccumulateGrad*>(node) == nullptr &&
            std::any_of(node->next.begin(), node->next.end(),
                        [&](const auto& next) { return next && needed.count(next.get()) != 0; });
      auto captured = captures->find(node);
      if (captured != captures->end())
        captured->second.grad = run ? grad_output : hooked_capture(captured->second, grad_output);
    }
    if (!run) continue;
    visited.push_back(node);
    // A node that no gradient reached passes none on, but still counts down its successors,
    // which may get gradients along other paths.
    std::vector<Tensor> grads;
    if (grad_output.defined()) {
      const ProfileScope profile(node->name(), {grad_output});
      grads = node->apply(grad_output);
      if (create_graph && !node->differentiable_backward &&
          dynamic_cast<AccumulateGrad*>(node) == nullptr) {
        for (Tensor& grad : grads)
          if (grad.defined()) grad = guarded_gradient(*node, grad, grad_output);
      }
    } else {
      grads.resize(node->next.size());
    }
    grad_output = Tensor();
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* next = node->next[i].get();
      if (!next || !takes_part(next)) continue;
      if (grads[i].defined()) {
        Tensor& slot = pending[next];
        slot = slot.defined() ? slot.add(grads[i]) : std::move(grads[i]);
      }
      if (--dependencies[next] == 0) ready.push(next);
    }
  }
  if (!retain_graph)
    for (Node* node : visited)
      if (dynamic_cast<AccumulateGrad*>(node) == nullptr) node->release();
  // By index: a callback may queue another.
  for (size_t i = 0; i < callbacks.size(); ++i) {
    std::function<void()> callback = std::move(callbacks[i]);
    callback();
  }
}

}  // namespace

void backward(const Tensor& root, const Tensor& gradient, std::optional<bool> retain_graph,
              bool create_graph) {
  MINIDL_CHECK(root.requires_grad(), "backward: the tensor of shape ", root.sizes(),
               " does not require grad and has no grad_fn");
  Tensor grad = initial_gradient(root, gradient, "backward");
  std::shared_ptr<Node> root_node = gradient_edge(root);
  run_backward({root_node.get()}, {std::move(grad)}, nullptr, retain_graph.value_or(create_graph),
               create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  MINIDL_CHECK(!outputs.empty(), "autograd::grad: expected at least one output");
  MINIDL_CHECK(!inputs.empty(), "autograd::grad: expected at least one input");
  MINIDL_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
               "autograd::grad: expected one grad_output per output (", outputs.size(), "), got ",
               grad_outputs.size());
  // The nodes are kept alive by these references while the pass runs.
  std::vector<std::shared_ptr<Node>> root_owners;
  std::vector<Node*> roots;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    MINIDL_CHECK(output.defined(), "autograd::grad: output ", i, " is an undefined tensor");
    MINIDL_CHECK(output.requires_grad(), "autograd::grad: output ", i, " of shape ", output.sizes(),
                 " does not require grad and has no grad_fn");
    root_grads.push_back(initial_gradient(output, grad_outputs.empty() ? Tensor() : grad_outputs[i],
                                          "autograd::grad"));
    root_owners.push_back(gradient_edge(output));
    roots.push_back(root_owners.back().get());
  }
  std::vector<std::shared_ptr<Node>> input_nodes;
  std::unordered_map<Node*, CapturedInput> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    MINIDL_CHECK(inputs[i].defined(), "autograd::grad: input ", i, " is an undefined tensor");
    MINIDL_CHECK(inputs[i].requires_grad(), "autograd::grad: input ", i, " of shape ",
                 inputs[i].sizes(), " does not require grad");
    input_nodes.push_back(gradient_edge(inputs[i]));
    // A leaf's hooks live on the tensor, a non-leaf's on its grad_fn.
    const auto* hooks = inputs[i].is_leaf() ? &inputs[i].unsafe_impl()->autograd_meta().grad_hooks
                                            : &input_nodes.back()->grad_hooks;
    captures.emplace(input_nodes.back().get(), CapturedInput{Tensor(), hooks});
  }
  run_backward(roots, std::move(root_grads), &captures, retain_graph.value_or(create_graph),
               create_graph);

  std::vector<Tensor> result;
  result.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& captured = captures.at(input_nodes[i].get()).grad;
    MINIDL_CHECK(captured.defined() || allow_unused, "autograd::grad: input ", i, " of shape ",
                 inputs[i].sizes(), " was not used in the graph of the outputs (or no gradient ",
                 "reaches it); pass allow_unused=true to get an undefined tensor for it");
    result.push_back(captured);
  }
  return result;
}

void queue_callback(std::function<void()> callback) {
  MINIDL_CHECK(queued_callbacks != nullptr,
               "queue_callback: no backward pass is running on this thread; call it from a ",
               "grad hook");
  queued_callbacks->push_back(std::move(callback));
}

}  // namespace minidl::autograd
