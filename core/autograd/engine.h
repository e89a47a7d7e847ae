#pragma once
#include "core/tensor.h"

namespace minidl::autograd {

// Runs the graph that produced `root` backward from `gradient`, in reverse topological order
// (later-created nodes first among the ready ones), and accumulates into leaves' .grad.
// Frees the graph unless retain_graph. Runs with grad mode off (no higher-order gradients).
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace minidl::autograd
