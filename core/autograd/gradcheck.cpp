#include "minidl/core/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "minidl/core/autograd/grad_mode.h"

namespace minidl {

namespace {

// Storage offsets (in elements) of every element of `t`, in row-major logical order, so that
// non-contiguous inputs are perturbed where they really live.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offsets(static_cast<size_t>(t.numel()));
  Shape index(static_cast<size_t>(t.dim()), 0);
  for (auto& offset : offsets) {
    offset = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) break;
      index[d] = 0;
    }
  }
  return offsets;
}

// sum(out * weights), computed on the host in double.
double weighted_sum(const Tensor& out, const std::vector<double>& weights) {
  std::vector<double> values = to_vector<double>(out);
  double total = 0;
  for (size_t i = 0; i < values.size(); ++i) total += values[i] * weights[i];
  return total;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  for (const Tensor& input : inputs) {
    MINIDL_CHECK(
        !input.defined() || !input.requires_grad() || (input.dtype() == kFloat64 && input.is_cpu()),
        "gradcheck: inputs that require grad must be float64 CPU tensors, got ", input.dtype(),
        " on ", input.device());
  }
  Tensor out = fn(inputs);
  MINIDL_CHECK(out.requires_grad(), "gradcheck: the output does not depend on any input that ",
               "requires grad");
  // Fixed pseudo-random weights in [0.5, 1.5): every output element contributes, with a
  // different weight, so a gradient routed to the wrong element is caught.
  std::vector<double> weights(static_cast<size_t>(out.numel()));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (double& w : weights) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    w = 0.5 + static_cast<double>(state >> 11) / static_cast<double>(1ull << 53);
  }
  Tensor weight_tensor = from_host(weights.data(), out.sizes(), kFloat64).to(out.dtype());
  for (const Tensor& input : inputs)
    if (input.defined() && input.requires_grad()) Tensor(input).set_grad(Tensor());
  out.mul(weight_tensor).sum().backward();

  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& input = inputs[k];
    if (!input.defined() || !input.requires_grad()) continue;
    Tensor grad = input.grad();
    std::vector<double> analytical =
        grad.defined() ? to_vector<double>(grad) : std::vector<double>(input.numel(), 0.0);
    double* base = static_cast<double*>(input.storage()->data());
    std::vector<int64_t> offsets = element_offsets(input);
    for (size_t i = 0; i < offsets.size(); ++i) {
      double& x = base[offsets[i]];
      const double original = x;
      x = original + eps;
      const double plus = weighted_sum(fn(inputs), weights);
      x = original - eps;
      const double minus = weighted_sum(fn(inputs), weights);
      x = original;
      const double numerical = (plus - minus) / (2 * eps);
      if (!(std::abs(analytical[i] - numerical) <= atol + rtol * std::abs(numerical))) {
        std::ostringstream message;
        message << "gradcheck: input " << k << " (shape " << input.sizes() << "), element " << i
                << ": analytical " << analytical[i] << " vs numerical " << numerical;
        return {false, message.str()};
      }
    }
  }
  return {};
}

}  // namespace minidl
