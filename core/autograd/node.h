#pragma once
// A node of the recorded graph: the backward of one op. It receives one gradient per output of
// the op (most ops have one; split, unbind and custom functions may have several) and returns
// one gradient per input (undefined where that input needs none). `next` holds, per input, the
// edge its gradient flows along (an empty edge when the input does not require grad): into the
// input's grad_fn at the input's output number, or into the AccumulateGrad node of a leaf.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl::autograd {

class Node;

// Where a gradient flows: into output `output_nr` of `node` (PyTorch's Edge).
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t output_nr = 0;

  explicit operator bool() const { return node != nullptr; }
};

// Hooks on the gradient of one output (Tensor::register_hook on a non-leaf), with their ids.
using GradHooks = std::vector<std::pair<int, GradHook>>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(std::string name, uint32_t num_outputs = 1);
  // Frees the nodes this one was the last owner of in a loop, not by recursion, so that a
  // graph of any depth can be freed (see Note [Releasing deep graphs] in node.cpp).
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  // Order of creation; the engine runs later nodes first among those that are ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  uint32_t num_outputs() const { return num_outputs_; }

  // One gradient per output, undefined where none reached that output (at least one is
  // defined: the engine does not run a node that no gradient reached).
  std::vector<Tensor> apply(std::vector<Tensor> grad_outputs);
  // apply({grad_output}), for a node of one output.
  std::vector<Tensor> apply(const Tensor& grad_output);
  // Frees what backward needed (saved tensors). A later apply() raises a clear error.
  void release();
  bool released() const { return released_; }

  std::vector<Edge> next;
  // The shape of each input, to check that backward returns gradients of the right shapes.
  std::vector<Shape> input_sizes;
  // Whether backward() gives differentiable gradients when grad mode is on (its formula is
  // made of recorded ops), so that a backward pass with create_graph can record through it.
  // A node without it makes the gradients of such a pass raise "double backward of <op> is not
  // supported" when a later backward reaches them (see Note [Double backward] in engine.cpp).
  bool differentiable_backward = false;
  // Per output, the hooks on its gradient (Tensor::register_hook on a non-leaf): apply() runs
  // them on the complete gradient, in registration order, before backward.
  std::vector<GradHooks> grad_hooks;

 protected:
  virtual std::vector<Tensor> backward(std::vector<Tensor> grad_outputs) = 0;
  virtual void release_saved() {}

 private:
  std::string name_;
  uint64_t sequence_nr_;
  uint32_t num_outputs_;
  bool released_ = false;
};

// The node whose backward() is running on this thread (set by Node::apply), or null: a
// SavedTensor of that node's own output rebuilds the output from it under create_graph.
Node* running_node();

// The backward of an op, written as a closure right beside its forward.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;
// The backward of an op with several outputs: gets one gradient per output, undefined where
// none reached it.
using OutputsBackwardFn = std::function<std::vector<Tensor>(std::vector<Tensor> grad_outputs)>;

class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}

 protected:
  std::vector<Tensor> backward(std::vector<Tensor> grad_outputs) override {
    return fn_(grad_outputs[0]);
  }
  void release_saved() override { fn_ = nullptr; }

 private:
  BackwardFn fn_;
};

class OutputsFunctionNode final : public Node {
 public:
  OutputsFunctionNode(std::string name, uint32_t num_outputs, OutputsBackwardFn fn)
      : Node(std::move(name), num_outputs), fn_(std::move(fn)) {}

 protected:
  std::vector<Tensor> backward(std::vector<Tensor> grad_outputs) override {
    return fn_(std::move(grad_outputs));
  }
  void release_saved() override { fn_ = nullptr; }

 private:
  OutputsBackwardFn fn_;
};

// Sink for a leaf's gradient: runs the leaf's gradient hooks (Tensor::register_hook) on it, adds
// the result to leaf.grad(), then runs the leaf's post-accumulate-grad hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);

 protected:
  std::vector<Tensor> backward(std::vector<Tensor> grad_outputs) override;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace minidl::autograd
