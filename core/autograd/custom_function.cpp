#include "minidl/core/autograd/custom_function.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "minidl/core/error.h"

namespace minidl::autograd {

namespace {

bool contains(const variable_list& tensors, const Tensor& t) {
  for (const Tensor& candidate : tensors)
    if (candidate.defined() && candidate.is_same(t)) return true;
  return false;
}

}  // namespace

void AutogradContext::save_for_backward(variable_list tensors) {
  MINIDL_CHECK(!saved_frozen_, "autograd::Function: save_for_backward may only be called in ",
               "forward");
  to_save_ = std::move(tensors);
}

variable_list AutogradContext::get_saved_variables() const {
  MINIDL_CHECK(saved_frozen_, "autograd::Function: get_saved_variables may only be called in ",
               "backward");
  variable_list tensors;
  tensors.reserve(saved_.size());
  for (const SavedTensor& saved : saved_) tensors.push_back(saved.get());
  return tensors;
}

void AutogradContext::freeze_saved(const std::string& op) {
  saved_.reserve(to_save_.size());
  // Saved detached, without their place in the graph: the in-place form saves an input that
  // becomes the output (its identity would make a reference cycle), and a custom function's
  // backward is not double-differentiable (its gradients are guarded under create_graph).
  for (const Tensor& t : to_save_) saved_.emplace_back(t.defined() ? t.detach() : t, op);
  to_save_.clear();
  saved_frozen_ = true;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs) dirty_.push_back(t);
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs) non_differentiable_.push_back(t);
}

bool AutogradContext::is_non_differentiable(const Tensor& output) const {
  return contains(non_differentiable_, output);
}

bool AutogradContext::needs_input_grad(size_t index) const {
  MINIDL_CHECK(index < needs_input_grad_.size(), "autograd::Function: needs_input_grad(", index,
               ") is out of range: forward has ", needs_input_grad_.size(), " tensor inputs");
  return needs_input_grad_[index];
}

namespace detail {

std::string type_name(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && demangled ? std::string(demangled.get()) : mangled;
  // The class's own name, as PyTorch's node names: "Softplus", not "ns::(anonymous)::Softplus"
  // (a template's arguments may hold "::" too, so only a name without them is shortened).
  const size_t last_colon = name.rfind("::");
  if (name.find('<') == std::string::npos && last_colon != std::string::npos)
    name = name.substr(last_colon + 2);
  return name;
}

variable_list finish_custom_function(
    variable_list outputs, const std::string& name, const std::shared_ptr<AutogradContext>& ctx,
    const std::vector<std::optional<Tensor>>& arguments,
    std::function<variable_list(AutogradContext*, variable_list)> backward) {
  for (size_t i = 0; i < outputs.size(); ++i)
    MINIDL_CHECK(outputs[i].defined(), name, ": forward returned an undefined tensor",
                 outputs.size() == 1 ? std::string() : " at position " + std::to_string(i));
  ctx->freeze_saved(name);

  variable_list inputs;         // the tensor arguments, in order
  std::vector<bool> is_tensor;  // per forward argument
  for (const auto& argument : arguments) {
    is_tensor.push_back(argument.has_value());
    if (argument.has_value()) inputs.push_back(*argument);
  }
  for (const Tensor& dirty : ctx->dirty_tensors()) {
    MINIDL_CHECK(contains(inputs, dirty), name, ": mark_dirty was given a tensor of shape ",
                 dirty.sizes(), " that is not an input of forward");
    MINIDL_CHECK(contains(outputs, dirty), name, ": a tensor marked dirty (shape ", dirty.sizes(),
                 ") must be returned by forward");
    MINIDL_CHECK(!(GradMode::is_enabled() && dirty.is_leaf() && dirty.requires_grad()), name,
                 ": a leaf of shape ", dirty.sizes(),
                 " that requires grad was changed in place (mark_dirty); run it under "
                 "NoGradGuard or pass a copy");
  }
  // The differentiable outputs are the node's outputs; backward gets every output's gradient.
  std::vector<size_t> differentiable;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!ctx->is_non_differentiable(outputs[i])) differentiable.push_back(i);
  // An output that is an input (returned unchanged), a tensor with a history of its own or one
  // returned twice becomes a new alias, so that recording this op rewrites no other history.
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& output = outputs[i];
    const bool in_place = contains(ctx->dirty_tensors(), output);
    const bool repeated = contains(variable_list(outputs.begin(), outputs.begin() + i), output);
    if (repeated || (!in_place && (contains(inputs, output) || output.requires_grad())))
      output = output.detach();
  }
  if (differentiable.empty()) return outputs;
  variable_list recorded;
  for (size_t i : differentiable) recorded.push_back(outputs[i]);

  struct TensorInfo {
    Shape sizes;
    DType dtype;
    Device device;
  };
  const auto info_of = [](const Tensor& t) {
    return t.defined() ? std::optional<TensorInfo>(TensorInfo{t.sizes(), t.dtype(), t.device()})
                       : std::nullopt;
  };
  std::vector<std::optional<TensorInfo>> input_info, output_info;
  for (const Tensor& input : inputs) input_info.push_back(info_of(input));
  for (const Tensor& output : outputs) output_info.push_back(info_of(output));
  record(recorded, name + "Backward", inputs,
         [ctx, name, is_tensor, input_info, output_info, differentiable,
          backward = std::move(backward)](variable_list node_grads) {
           variable_list grad_outputs(output_info.size());
           for (size_t k = 0; k < differentiable.size(); ++k)
             grad_outputs[differentiable[k]] = std::move(node_grads[k]);
           if (ctx->materialize_grads()) {
             for (size_t i = 0; i < grad_outputs.size(); ++i) {
               if (grad_outputs[i].defined()) continue;
               const TensorInfo& output = *output_info[i];
               grad_outputs[i] =
                   zeros(output.sizes, TensorOptions().dtype(output.dtype).device(output.device));
             }
           }
           variable_list grads = backward(ctx.get(), std::move(grad_outputs));
           // Extra trailing gradients are allowed when undefined, as in LibTorch.
           for (size_t i = is_tensor.size(); i < grads.size(); ++i)
             MINIDL_CHECK(!grads[i].defined(), name, " backward: returned an incorrect number ",
                          "of gradients (expected ", is_tensor.size(), ", got ", grads.size(), ")");
           MINIDL_CHECK(grads.size() >= is_tensor.size(), name,
                        " backward: returned an incorrect number of gradients (expected ",
                        is_tensor.size(), ", got ", grads.size(), ")");
           variable_list input_grads;
           for (size_t i = 0; i < is_tensor.size(); ++i) {
             if (!is_tensor[i]) {
               MINIDL_CHECK(!grads[i].defined(), name, " backward: returned a defined gradient ",
                            "at position ", i, ", but that forward argument is not a tensor");
               continue;
             }
             const size_t input = input_grads.size();
             Tensor g = ctx->needs_input_grad(input) ? std::move(grads[i]) : Tensor();
             if (g.defined()) {
               const TensorInfo& expected = *input_info[input];
               MINIDL_CHECK(g.sizes() == expected.sizes && g.dtype() == expected.dtype &&
                                g.device() == expected.device,
                            name, " backward: the gradient at position ", i,
                            " should have its input's shape ", expected.sizes, ", dtype ",
                            expected.dtype, " on ", expected.device, ", but has shape ", g.sizes(),
                            ", dtype ", g.dtype(), " on ", g.device());
             }
             input_grads.push_back(std::move(g));
           }
           return input_grads;
         });
  // `recorded` holds the same tensors as `outputs` (a Tensor is a handle): they now have history.
  return outputs;
}

}  // namespace detail

}  // namespace minidl::autograd
