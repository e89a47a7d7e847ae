#pragma once
// A differentiable operation written as a class, as LibTorch's torch::autograd::Function:
//
//   struct ScaledSquare : autograd::Function<ScaledSquare> {
//     static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double k) {
//       ctx->save_for_backward({x});
//       ctx->saved_data["k"] = k;
//       return x * x * k;
//     }
//     static autograd::variable_list backward(autograd::AutogradContext* ctx,
//                                             autograd::variable_list grad_outputs) {
//       const Tensor x = ctx->get_saved_variables()[0];
//       const double k = std::any_cast<double>(ctx->saved_data["k"]);
//       return {grad_outputs[0] * x * (2 * k), Tensor()};  // one per forward argument
//     }
//   };
//   Tensor y = ScaledSquare::apply(x, 3.0);
//
// forward runs with grad mode off and gets the arguments of apply() as they are; Tensor (and
// std::optional<Tensor>) arguments are the op's inputs, any other argument passes through.
// forward returns one Tensor, and apply() that Tensor; or a variable_list, and apply() that
// list, each output differentiable on its own (as LibTorch's).
// backward gets one gradient per output, zeros for an output no gradient reached (unless
// ctx->set_materialize_grads(false): undefined then), and returns one per forward argument, in
// order: an undefined Tensor for a non-tensor argument or an input that needs none (gradients
// for inputs that do not need one are dropped). A returned gradient must have its input's
// shape, dtype and device.
#include <any>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/tensor.h"

namespace minidl::autograd {

using variable_list = std::vector<Tensor>;

class AutogradContext {
 public:
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Small values for backward (scalars, sizes, flags), as LibTorch's ctx->saved_data. Holding a
  // tensor that requires grad here can keep the graph alive in a cycle; save tensors with
  // save_for_backward instead.
  std::unordered_map<std::string, std::any> saved_data;

  // Keeps `tensors` for backward. Call it in forward, at most once; inputs, the output and
  // undefined tensors may be saved. Their versions are taken when forward returns, and
  // get_saved_variables() raises an error if one was changed in place after that.
  void save_for_backward(variable_list tensors);
  // The saved tensors, in the order saved (call it in backward).
  variable_list get_saved_variables() const;

  // Declares that forward changed these inputs in place; the one returned must be among them
  // (and then is the input itself, which takes the op into its history). A leaf that requires
  // grad may not be changed in place.
  void mark_dirty(const variable_list& inputs);
  // Declares these outputs not differentiable: they get no grad_fn and do not require grad.
  void mark_non_differentiable(const variable_list& outputs);
  // Whether backward gets zeros (true, the default) or undefined tensors for the outputs no
  // gradient reached, as LibTorch's.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  bool materialize_grads() const { return materialize_grads_; }

  // Whether the gradient of tensor input `index` (counting Tensor and std::optional<Tensor>
  // arguments only, as LibTorch does) is needed.
  bool needs_input_grad(size_t index) const;

  // For Function<T>::apply.
  void set_needs_input_grad(std::vector<bool> needs) { needs_input_grad_ = std::move(needs); }
  const variable_list& dirty_tensors() const { return dirty_; }
  bool is_non_differentiable(const Tensor& output) const;
  // Turns the tensors given to save_for_backward into SavedTensors, once forward has returned.
  void freeze_saved(const std::string& op);

 private:
  variable_list to_save_;
  std::vector<SavedTensor> saved_;
  bool saved_frozen_ = false;
  variable_list dirty_;
  variable_list non_differentiable_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
};

namespace detail {

// The demangled name of T, for the node's name.
std::string type_name(const char* mangled);

// For each forward argument: the tensor it holds, or nothing.
inline std::optional<Tensor> as_input(const Tensor& t) { return t; }
inline std::optional<Tensor> as_input(const std::optional<Tensor>& t) {
  return t.has_value() ? *t : Tensor();
}
template <class A>
std::optional<Tensor> as_input(const A&) {
  return std::nullopt;
}

// Records `outputs` of the custom function `name` (see Function<T>::apply), backed by
// `backward`, which maps the outputs' gradients to one gradient per forward argument.
variable_list finish_custom_function(
    variable_list outputs, const std::string& name, const std::shared_ptr<AutogradContext>& ctx,
    const std::vector<std::optional<Tensor>>& arguments,
    std::function<variable_list(AutogradContext*, variable_list)> backward);

}  // namespace detail

template <class T>
struct Function {
  // forward's outputs, recorded: a Tensor or a variable_list, as forward returns.
  template <class... Args>
  static auto apply(Args&&... args) {
    using Result =
        decltype(T::forward(static_cast<AutogradContext*>(nullptr), std::forward<Args>(args)...));
    constexpr bool several = std::is_same_v<std::decay_t<Result>, variable_list>;
    static_assert(several || std::is_convertible_v<Result, Tensor>,
                  "autograd::Function: forward must return a Tensor or a variable_list");
    auto ctx = std::make_shared<AutogradContext>();
    std::vector<std::optional<Tensor>> arguments{detail::as_input(args)...};
    std::vector<bool> needs;
    for (const auto& argument : arguments)
      if (argument.has_value())
        needs.push_back(GradMode::is_enabled() && argument->defined() && argument->requires_grad());
    ctx->set_needs_input_grad(std::move(needs));
    variable_list outputs;
    {
      NoGradGuard no_grad;
      if constexpr (several) {
        outputs = T::forward(ctx.get(), std::forward<Args>(args)...);
      } else {
        outputs.push_back(T::forward(ctx.get(), std::forward<Args>(args)...));
      }
    }
    variable_list recorded = detail::finish_custom_function(
        std::move(outputs), detail::type_name(typeid(T).name()), ctx, arguments,
        [](AutogradContext* context, variable_list grads) {
          return T::backward(context, std::move(grads));
        });
    if constexpr (several) {
      return recorded;
    } else {
      return recorded[0];
    }
  }
};

}  // namespace minidl::autograd
