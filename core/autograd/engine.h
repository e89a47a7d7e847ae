#pragma once
#include <functional>

#include "minidl/core/tensor.h"

namespace minidl::autograd {

// Runs the graph that produced `root` backward from `gradient`, in reverse topological order
// (later-created nodes first among the ready ones), and accumulates into leaves' .grad.
// Frees the graph unless retain_graph. Runs with grad mode off (no higher-order gradients).
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// Queues `callback` to run once the backward pass running on this thread has processed every
// node, just before backward() returns (PyTorch's queue_callback), in the order queued. For
// grad hooks that start work to finish at the end of the pass: DistributedDataParallel waits
// for its gradient all-reduces there. An exception from a callback leaves backward(). Throws
// when no backward pass is running on this thread.
void queue_callback(std::function<void()> callback);

}  // namespace minidl::autograd
