#include "minidl/core/autograd/custom_function.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

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

Tensor finish_custom_function(
    Tensor output, const std::string& name, const std::shared_ptr<AutogradContext>& ctx,
    const std::vector<std::optional<Tensor>>& arguments,
    std::function<variable_list(AutogradContext*, variable_list)> backward) {
  MINIDL_CHECK(output.defined(), name, ": forward returned an undefined tensor");
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
    MINIDL_CHECK(dirty.is_same(output), name, ": a tensor marked dirty (shape ", dirty.sizes(),
                 ") must be returned by forward");
    MINIDL_CHECK(!(GradMode::is_enabled() && dirty.is_leaf() && dirty.requires_grad()), name,
                 ": a leaf of shape ", dirty.sizes(),
                 " that requires grad was changed in place (mark_dirty); run it under "
                 "NoGradGuard or pass a copy");
  }
  const bool in_place = contains(ctx->dirty_tensors(), output);
  // An output that is an input (returned unchanged) or a tensor with a history of its own
  // becomes a new alias, so that recording this op does not rewrite that tensor's history.
  if (!in_place && (contains(inputs, output) || output.requires_grad())) output = output.detach();
  if (ctx->is_non_differentiable(output)) return output;

  struct InputInfo {
    Shape sizes;
    DType dtype;
    Device device;
  };
  std::vector<std::optional<InputInfo>> info;
  for (const Tensor& input : inputs)
    info.push_back(input.defined() ? std::optional<InputInfo>(
                                         InputInfo{input.sizes(), input.dtype(), input.device()})
                                   : std::nullopt);
  record(output, name + "Backward", inputs,
         [ctx, name, is_tensor, info, backward = std::move(backward)](const Tensor& grad) {
           variable_list grads = backward(ctx.get(), variable_list{grad});
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
               const InputInfo& expected = *info[input];
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
  return output;
}

}  // namespace detail

}  // namespace minidl::autograd
