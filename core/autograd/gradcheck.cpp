#include "minidl/core/autograd/gradcheck.h"

#include <cmath>
#include <sstream>
#include <string>

#include "minidl/core/autograd/engine.h"
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

// Fixed pseudo-random weights in [0.5, 1.5), the same for every call: every output element
// contributes, with a different weight, so a gradient routed to the wrong element is caught.
std::vector<double> fixed_weights(int64_t count, uint64_t state) {
  std::vector<double> weights(static_cast<size_t>(count));
  for (double& w : weights) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    w = 0.5 + static_cast<double>(state >> 11) / static_cast<double>(1ull << 53);
  }
  return weights;
}

// Switches grad mode on for a scope (gradcheck's numerical pass runs under NoGradGuard, and the
// first gradient that gradgradcheck differentiates needs a recorded graph).
class EnableGradScope {
 public:
  EnableGradScope() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradScope() { GradMode::set_enabled(previous_); }
  EnableGradScope(const EnableGradScope&) = delete;
  EnableGradScope& operator=(const EnableGradScope&) = delete;

 private:
  bool previous_;
};

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
  const std::vector<double> weights = fixed_weights(out.numel(), 0x9e3779b97f4a7c15ull);
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

GradcheckResult gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                              const std::vector<Tensor>& inputs, double eps, double atol,
                              double rtol) {
  std::vector<size_t> checked;  // the inputs whose first gradient is differentiated
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].defined() && inputs[k].requires_grad()) checked.push_back(k);
  MINIDL_CHECK(!checked.empty(), "gradgradcheck: no input requires grad");
  Shape out_sizes;
  {
    const EnableGradScope grad_mode;
    out_sizes = fn(inputs).sizes();
  }
  // The grad_output v, an input of the checked function too (see gradcheck.h).
  const std::vector<double> v_values = fixed_weights(shape_numel(out_sizes), 0x2545f4914f6cdd1dull);
  Tensor v = from_host(v_values.data(), out_sizes, kFloat64);
  v.requires_grad_(true);
  std::vector<Tensor> extended = inputs;
  extended.push_back(v);

  // One gradcheck per checked input k, of its first gradient as a function of every input.
  for (size_t position = 0; position < checked.size(); ++position) {
    const auto first_gradient = [&fn, &checked, position](const std::vector<Tensor>& args) {
      const EnableGradScope grad_mode;
      const std::vector<Tensor> forward_args(args.begin(), args.end() - 1);
      Tensor out = fn(forward_args);
      MINIDL_CHECK(out.requires_grad(), "gradgradcheck: the output does not depend on any ",
                   "input that requires grad");
      std::vector<Tensor> wrt;
      for (size_t k : checked) wrt.push_back(args[k]);
      std::vector<Tensor> grads = autograd::grad({out}, wrt, {args.back()}, /*retain_graph=*/true,
                                                 /*create_graph=*/true, /*allow_unused=*/true);
      const Tensor& grad = grads[position];
      // An input the output does not use has a zero gradient, whose derivatives are zero.
      return grad.defined() ? grad : wrt[position].mul(0.0);
    };
    GradcheckResult result = gradcheck(first_gradient, extended, eps, atol, rtol);
    if (!result) {
      result.message = "gradgradcheck: the gradient of input " + std::to_string(checked[position]) +
                       ": " + result.message;
      return result;
    }
  }
  return {};
}

}  // namespace minidl
