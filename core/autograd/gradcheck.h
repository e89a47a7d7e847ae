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

}  // namespace minidl
