#pragma once
// Compares autograd's gradients with f64 central differences, for users' own tests too.
#include <functional>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl {

struct GradcheckResult {
  bool ok = true;
  std::string message;  // which input, which element, analytical vs numerical, when !ok
  explicit operator bool() const { return ok; }
};

// `fn` maps `inputs` (float64 CPU tensors; those with requires_grad are checked) to one tensor.
// Each element x of each checked input is perturbed to x +- eps; the numerical derivative of
// sum(fn(inputs) * w) for a fixed random w is compared with autograd's, passing when
// |analytical - numerical| <= atol + rtol * |numerical|.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
                          double rtol = 1e-3);

// torch.autograd.gradgradcheck: checks second derivatives the same way. The function checked
// is the first gradient, autograd::grad(fn(inputs), checked inputs, {v}, create_graph=true), for a
// fixed pseudo-random float64 grad_output v that requires grad itself: so both the derivative of
// the gradient in each input (d2 fn / dx dy) and in v (the gradient's linearity in what flows
// in, the only second derivative of ops such as relu) are compared with central differences of
// the gradient. An op whose backward is not differentiable raises its "double backward of <op>
// is not supported" error.
GradcheckResult gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                              const std::vector<Tensor>& inputs, double eps = 1e-6,
                              double atol = 1e-5, double rtol = 1e-3);

}  // namespace minidl
