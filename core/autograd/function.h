#pragma once
// How an op joins the graph. After computing `out` from `inputs`:
//
//   if (autograd::needs_grad({a, b})) {
//     autograd::SavedTensor saved_b(b, "mul");
//     autograd::record(out, "mul", {a, b}, [saved_b](const Tensor& grad) {
//       return std::vector<Tensor>{grad * saved_b.get(), Tensor()};
//     });
//   }
//
// The closure returns one gradient per input, each with its input's shape (use sum_to for
// broadcast inputs), or an undefined Tensor where none flows.
#include <initializer_list>
#include <string>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/node.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/tensor.h"

namespace minidl::autograd {

// True when grad mode is on and some input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// Whether an op's backward closure is itself differentiable: with grad mode on (a backward pass
// with create_graph) it computes its gradients from recorded ops and from SavedTensor::get(),
// so that they carry a graph of their own. An op recorded with kUnsupported still runs under
// create_graph, but a backward through the gradients it gave raises a clear error.
enum class DoubleBackward { kUnsupported, kSupported };

// Makes `out` a non-leaf with a FunctionNode named `op` (does nothing if !needs_grad(inputs)).
void record(Tensor& out, std::string op, const std::vector<Tensor>& inputs, BackwardFn backward,
            DoubleBackward double_backward = DoubleBackward::kUnsupported);

// The same for an op with several outputs: makes each of `outputs` a non-leaf, output i of one
// OutputsFunctionNode, whose backward gets one gradient per output (undefined where none
// reached that output) and returns one per input.
void record(std::vector<Tensor>& outputs, std::string op, const std::vector<Tensor>& inputs,
            OutputsBackwardFn backward,
            DoubleBackward double_backward = DoubleBackward::kUnsupported);

// Where an input's gradient flows: its grad_fn at the output it is, or its leaf accumulator;
// an empty edge when the input does not require grad.
Edge gradient_edge(const Tensor& input);

}  // namespace minidl::autograd

namespace minidl::autograd {

// In-place ops are not recorded: they refuse a tensor that requires grad while grad mode is on
// (as PyTorch does for leaves). Updates such as the optimizer's run under NoGradGuard.
void check_inplace(const Tensor& target, const char* op);

}  // namespace minidl::autograd
