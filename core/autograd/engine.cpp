#include "minidl/core/autograd/engine.h"

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

// Number of incoming edges of every node reachable from `root`.
std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> dependencies{{root, 0}};
  std::vector<Node*> stack{root};
  std::unordered_set<Node*> seen{root};
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

struct LaterFirst {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

}  // namespace

void backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  MINIDL_CHECK(root.requires_grad(), "backward: the tensor of shape ", root.sizes(),
               " does not require grad and has no grad_fn");
  Tensor grad = gradient;
  if (!grad.defined()) {
    MINIDL_CHECK(root.numel() == 1, "backward: a gradient can be created implicitly only for ",
                 "one-element outputs; pass a gradient for the output of shape ", root.sizes());
    grad = ones_like(root);
  }
  MINIDL_CHECK(grad.sizes() == root.sizes() && grad.dtype() == root.dtype() &&
                   grad.device() == root.device(),
               "backward: expected a gradient of shape ", root.sizes(), ", dtype ", root.dtype(),
               " on ", root.device(), ", got shape ", grad.sizes(), ", dtype ", grad.dtype(),
               " on ", grad.device());

  NoGradGuard no_grad;
  amp::NoAutocastGuard no_autocast;  // each backward runs in its forward's dtypes
  std::vector<std::function<void()>> callbacks;
  CallbackQueueScope callback_scope(&callbacks);
  std::shared_ptr<Node> root_node = gradient_edge(root);
  std::unordered_map<Node*, int> dependencies = count_dependencies(root_node.get());
  std::unordered_map<Node*, Tensor> pending{{root_node.get(), grad}};
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  ready.push(root_node.get());
  std::vector<Node*> visited;

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    visited.push_back(node);
    Tensor grad_output = std::move(pending[node]);
    pending.erase(node);
    // A node that no gradient reached passes none on, but still counts down its successors,
    // which may get gradients along other paths.
    std::vector<Tensor> grads;
    if (grad_output.defined()) {
      const ProfileScope profile(node->name());
      grads = node->apply(grad_output);
    } else {
      grads.resize(node->next.size());
    }
    grad_output = Tensor();
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* next = node->next[i].get();
      if (!next) continue;
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

void queue_callback(std::function<void()> callback) {
  MINIDL_CHECK(queued_callbacks != nullptr,
               "queue_callback: no backward pass is running on this thread; call it from a ",
               "grad hook");
  queued_callbacks->push_back(std::move(callback));
}

}  // namespace minidl::autograd
