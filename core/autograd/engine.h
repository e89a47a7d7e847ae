#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl::autograd {

// Runs the graph that produced `root` backward from `gradient`, in reverse topological order
// (later-created nodes first among the ready ones), and accumulates into leaves' .grad.
// Frees the graph unless retain_graph, which defaults to create_graph. Runs with grad mode off,
// or with create_graph on, recording the graph of the gradients themselves (for higher-order
// gradients: the leaves' .grad then have a grad_fn, and are replaced rather than added to in
// place). A gradient from an op whose backward is not differentiable yet gets a graph that raises
// "double backward of <op> is not supported" when differentiated.
void backward(const Tensor& root, const Tensor& gradient,
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// torch::autograd::grad: the gradients of `outputs` (weighted by `grad_outputs`) with respect to
// each of `inputs`, returned instead of accumulated: no leaf's .grad() changes, and only the
// part of the graph between the outputs and the inputs runs. An input may be a non-leaf; its
// gradient is the one flowing into that tensor (the sum over every path). grad_outputs has one
// entry per output, or is empty; an undefined entry is ones for a one-element output (an error
// for any other). retain_graph defaults to create_graph. An input the outputs do not depend on
// is an error unless allow_unused, which gives an undefined Tensor for it. As in PyTorch, an
// input's own hooks (Tensor::register_hook) change the gradient returned for it when its node
// does not run; where the gradient also flows on to another input, the input gets the gradient
// before its hooks and what flows on gets it after them. create_graph=true records the graph of
// the gradients, so that they can be differentiated again (double backward; see backward).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

// Queues `callback` to run once the backward pass running on this thread has processed every
// node, just before backward() returns (PyTorch's queue_callback), in the order queued. For
// grad hooks that start work to finish at the end of the pass: DistributedDataParallel waits
// for its gradient all-reduces there. An exception from a callback leaves backward(). Throws
// when no backward pass is running on this thread.
void queue_callback(std::function<void()> callback);

}  // namespace minidl::autograd
