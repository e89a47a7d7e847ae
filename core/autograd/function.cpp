#include "minidl/core/autograd/function.h"

#include "minidl/core/autograd/grad_mode.h"

namespace minidl::autograd {

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& input) {
  if (!input.defined() || !input.requires_grad()) return {};
  AutogradMeta& meta = input.unsafe_impl()->autograd_meta();
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  std::shared_ptr<Node> accumulator = meta.grad_accumulator.lock();
  if (!accumulator) {
    accumulator = std::make_shared<AccumulateGrad>(input.impl_ptr());
    meta.grad_accumulator = accumulator;
  }
  return {std::move(accumulator), 0};
}

namespace {

// Gives `node` its edges: one per input.
void connect_inputs(Node& node, const std::vector<Tensor>& inputs, DoubleBackward double_backward) {
  node.differentiable_backward = double_backward == DoubleBackward::kSupported;
  node.next.reserve(inputs.size());
  node.input_sizes.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    node.next.push_back(gradient_edge(input));
    node.input_sizes.push_back(input.defined() ? input.sizes() : Shape{});
  }
}

// Makes `out` output `output_nr` of `node`.
void set_history(Tensor& out, std::shared_ptr<Node> node, uint32_t output_nr) {
  AutogradMeta& meta = out.unsafe_impl()->autograd_meta();
  meta.requires_grad = true;
  meta.grad_fn = std::move(node);
  meta.output_nr = output_nr;
}

}  // namespace

void record(Tensor& out, std::string op, const std::vector<Tensor>& inputs, BackwardFn backward,
            DoubleBackward double_backward) {
  if (!needs_grad(inputs)) return;
  auto node = std::make_shared<FunctionNode>(std::move(op), std::move(backward));
  connect_inputs(*node, inputs, double_backward);
  set_history(out, std::move(node), 0);
}

void record(std::vector<Tensor>& outputs, std::string op, const std::vector<Tensor>& inputs,
            OutputsBackwardFn backward, DoubleBackward double_backward) {
  if (!needs_grad(inputs)) return;
  auto node = std::make_shared<OutputsFunctionNode>(
      std::move(op), static_cast<uint32_t>(outputs.size()), std::move(backward));
  connect_inputs(*node, inputs, double_backward);
  for (size_t i = 0; i < outputs.size(); ++i)
    set_history(outputs[i], node, static_cast<uint32_t>(i));
}

}  // namespace minidl::autograd

namespace minidl::autograd {

void check_inplace(const Tensor& target, const char* op) {
  MINIDL_CHECK(!(GradMode::is_enabled() && target.requires_grad()), op,
               ": in-place operation on a tensor of shape ", target.sizes(),
               " that requires grad; run it under NoGradGuard or use the out-of-place form");
}

}  // namespace minidl::autograd
