#include "minidl/core/autograd/engine.h"

#include <algorithm>
#include <map>
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
    for (const Edge& next : node->next) {
      if (!next) continue;
      shape.parents[next.node.get()].push_back(node);
      if (shape.nodes.insert(next.node.get()).second) stack.push_back(next.node.get());
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
    for (const Edge& next : node->next) {
      if (!next) continue;
      ++dependencies[next.node.get()];
      if (seen.insert(next.node.get()).second) stack.push_back(next.node.get());
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

// What autograd::grad collects at an input's edge: the gradient, and the hooks to run on it.
struct CapturedInput {
  Tensor grad;
  const GradHooks* hooks = nullptr;
};
// autograd::grad's inputs, by the edge their gradients arrive at (node, output number).
using Captures = std::map<std::pair<Node*, uint32_t>, CapturedInput>;

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
// true second derivative would reach) and of the incoming gradients, so a later backward or
// autograd::grad that needs the gradient's derivative reaches the guard and fails clearly,
// while a pass that never differentiates the gradient is not affected (as in PyTorch, whose
// ops without a double-backward formula fail at the second backward too).
Tensor guarded_gradient(const Node& node, const Tensor& grad,
                        const std::vector<Tensor>& grad_outputs) {
  const std::string op = node.name();
  auto guard = std::make_shared<FunctionNode>(op, [op](const Tensor&) -> std::vector<Tensor> {
    MINIDL_CHECK(false, "double backward of ", op, " is not supported: the gradient it gave in ",
                 "a backward pass with create_graph=true cannot be differentiated again (its ",
                 "backward formula is not differentiable yet)");
    return {};
  });
  guard->next = node.next;
  guard->input_sizes = node.input_sizes;
  for (const Tensor& grad_output : grad_outputs) {
    if (!grad_output.defined()) continue;
    guard->next.push_back(gradient_edge(grad_output));
    guard->input_sizes.push_back(grad_output.sizes());
  }
  Tensor guarded = grad.detach();
  AutogradMeta& meta = guarded.unsafe_impl()->autograd_meta();
  meta.requires_grad = true;
  meta.grad_fn = std::move(guard);
  return guarded;
}

// Adds `grad` to what output `edge.output_nr` of `edge.node` has received so far.
void add_gradient(std::unordered_map<Node*, std::vector<Tensor>>& pending, const Edge& edge,
                  Tensor grad) {
  std::vector<Tensor>& slots = pending[edge.node.get()];
  slots.resize(edge.node->num_outputs());
  Tensor& slot = slots[edge.output_nr];
  slot = slot.defined() ? slot.add(grad) : std::move(grad);
}

// One backward pass from `roots` (seeded with `root_grads`). Without `captures` every reachable
// node runs, as for Tensor::backward. With them (autograd::grad) only the nodes that lead to a
// captured edge run, and the complete gradient arriving at each captured edge is stored in
// `captures` (an AccumulateGrad node is captured, never run).
void run_backward(const std::vector<Edge>& roots, std::vector<Tensor> root_grads,
                  Captures* captures, bool retain_graph, bool create_graph) {
  const GradModeScope grad_mode(create_graph);  // see Note [Double backward]
  amp::NoAutocastGuard no_autocast;             // each backward runs in its forward's dtypes
  std::vector<std::function<void()>> callbacks;
  CallbackQueueScope callback_scope(&callbacks);

  std::vector<Node*> root_nodes;
  for (const Edge& root : roots) root_nodes.push_back(root.node.get());
  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> needed;  // with captures: the nodes that take part
  if (captures == nullptr) {
    dependencies = count_dependencies(root_nodes);
  } else {
    const GraphShape shape = explore(root_nodes);
    std::unordered_set<Node*> targets;
    for (const auto& [edge, captured] : *captures) targets.insert(edge.first);
    needed = nodes_leading_to(targets, shape);
    for (Node* node : needed) {
      dependencies.emplace(node, 0);
      for (const Edge& next : node->next)
        if (next && needed.count(next.node.get()) != 0) ++dependencies[next.node.get()];
    }
  }
  const auto takes_part = [&](Node* node) {
    return captures == nullptr || needed.count(node) != 0;
  };

  // The gradients each node has received so far, one slot per output.
  std::unordered_map<Node*, std::vector<Tensor>> pending;
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    Node* node = roots[i].node.get();
    if (!takes_part(node)) continue;
    if (pending.count(node) == 0 && dependencies[node] == 0) ready.push(node);
    add_gradient(pending, roots[i], std::move(root_grads[i]));
  }
  std::vector<Node*> visited;

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grad_outputs = std::move(pending[node]);
    pending.erase(node);
    grad_outputs.resize(node->num_outputs());
    bool run = true;
    if (captures != nullptr) {
      // A captured node runs only when the gradient must go on to another captured node.
      run = dynamic_cast<AccumulateGrad*>(node) == nullptr &&
            std::any_of(node->next.begin(), node->next.end(), [&](const Edge& next) {
              return next && needed.count(next.node.get()) != 0;
            });
      for (uint32_t output = 0; output < node->num_outputs(); ++output) {
        auto captured = captures->find({node, output});
        if (captured == captures->end()) continue;
        captured->second.grad =
            run ? grad_outputs[output] : hooked_capture(captured->second, grad_outputs[output]);
      }
    }
    if (!run) continue;
    visited.push_back(node);
    // A node that no gradient reached passes none on, but still counts down its successors,
    // which may get gradients along other paths.
    const auto reached = std::find_if(grad_outputs.begin(), grad_outputs.end(),
                                      [](const Tensor& grad) { return grad.defined(); });
    std::vector<Tensor> grads;
    if (reached != grad_outputs.end()) {
      const ProfileScope profile(node->name(), {*reached});
      // Kept for a guard node only: otherwise the node owns its gradients (AccumulateGrad takes
      // over one that nothing else references).
      std::vector<Tensor> kept;
      const bool guard = create_graph && !node->differentiable_backward &&
                         dynamic_cast<AccumulateGrad*>(node) == nullptr;
      if (guard) kept = grad_outputs;
      grads = node->apply(std::move(grad_outputs));
      if (guard) {
        for (Tensor& grad : grads)
          if (grad.defined()) grad = guarded_gradient(*node, grad, kept);
      }
    } else {
      grads.resize(node->next.size());
    }
    grad_outputs.clear();
    for (size_t i = 0; i < node->next.size(); ++i) {
      const Edge& next = node->next[i];
      if (!next || !takes_part(next.node.get())) continue;
      if (grads[i].defined()) add_gradient(pending, next, std::move(grads[i]));
      if (--dependencies[next.node.get()] == 0) ready.push(next.node.get());
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
  run_backward({gradient_edge(root)}, {std::move(grad)}, nullptr,
               retain_graph.value_or(create_graph), create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  MINIDL_CHECK(!outputs.empty(), "autograd::grad: expected at least one output");
  MINIDL_CHECK(!inputs.empty(), "autograd::grad: expected at least one input");
  MINIDL_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
               "autograd::grad: expected one grad_output per output (", outputs.size(), "), got ",
               grad_outputs.size());
  // The edges keep their nodes alive while the pass runs.
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    MINIDL_CHECK(output.defined(), "autograd::grad: output ", i, " is an undefined tensor");
    MINIDL_CHECK(output.requires_grad(), "autograd::grad: output ", i, " of shape ", output.sizes(),
                 " does not require grad and has no grad_fn");
    root_grads.push_back(initial_gradient(output, grad_outputs.empty() ? Tensor() : grad_outputs[i],
                                          "autograd::grad"));
    roots.push_back(gradient_edge(output));
  }
  std::vector<Edge> input_edges;
  Captures captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    MINIDL_CHECK(inputs[i].defined(), "autograd::grad: input ", i, " is an undefined tensor");
    MINIDL_CHECK(inputs[i].requires_grad(), "autograd::grad: input ", i, " of shape ",
                 inputs[i].sizes(), " does not require grad");
    const Edge& edge = input_edges.emplace_back(gradient_edge(inputs[i]));
    // A leaf's hooks live on the tensor, a non-leaf's on its grad_fn.
    const GradHooks* hooks = inputs[i].is_leaf()
                                 ? &inputs[i].unsafe_impl()->autograd_meta().grad_hooks
                                 : &edge.node->grad_hooks[edge.output_nr];
    captures.emplace(std::pair{edge.node.get(), edge.output_nr}, CapturedInput{Tensor(), hooks});
  }
  run_backward(roots, std::move(root_grads), &captures, retain_graph.value_or(create_graph),
               create_graph);

  std::vector<Tensor> result;
  result.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& captured =
        captures.at({input_edges[i].node.get(), input_edges[i].output_nr}).grad;
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
