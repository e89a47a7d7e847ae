// Random tensors: validation and dispatch. The values come from the global Philox generator
// (core/generator.h); kernels in ops/random_kernels.h.
#include "minidl/ops/random.h"

#include <cmath>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/generator.h"
#include "minidl/ops/random_kernels.h"

namespace minidl {

namespace {

enum class Distribution { Uniform, Normal };

// Fills `out` (contiguous) with numel draws from fresh counters of the default generator.
void fill_random(const Tensor& out, Distribution distribution, double a, double b) {
  const GeneratorState start = default_generator().reserve(static_cast<uint64_t>(out.numel()));
  if (out.numel() == 0) return;
  const RandomKernels& kernels = kernels_for<RandomKernels>(out.device());
  if (distribution == Distribution::Uniform)
    kernels.uniform(out, a, b, start);
  else
    kernels.normal(out, a, b, start);
}

// Draws into `t` in row-major logical order, through a contiguous buffer for strided views.
void fill_random_inplace(Tensor& t, Distribution distribution, double a, double b, const char* op) {
  autograd::check_inplace(t, op);
  visit_floating(t.dtype(), op, [](auto) {});  // rejects integer and bool tensors
  if (t.is_contiguous()) {
    fill_random(t, distribution, a, b);
    t.bump_version();
    return;
  }
  Tensor buffer = empty(t.sizes(), t.options());
  fill_random(buffer, distribution, a, b);
  NoGradGuard no_grad;
  t.copy_(buffer);  // bumps the version
}

Tensor random_tensor(const Shape& sizes, const TensorOptions& options, Distribution distribution,
                     const char* op) {
  visit_floating(options.dtype(), op, [](auto) {});
  Tensor out = empty(sizes, TensorOptions(options).requires_grad(false));
  fill_random(out, distribution, 0.0, 1.0);  // [0, 1) or mean 0, std 1
  if (options.requires_grad()) out.requires_grad_(true);
  return out;
}

}  // namespace

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Tensor rand(const Shape& sizes, TensorOptions options) {
  return random_tensor(sizes, options, Distribution::Uniform, "rand");
}

Tensor randn(const Shape& sizes, TensorOptions options) {
  return random_tensor(sizes, options, Distribution::Normal, "randn");
}

Tensor& uniform_(Tensor& t, double low, double high) {
  MINIDL_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high,
               "uniform_: expected finite bounds with low <= high, got [", low, ", ", high, ")");
  fill_random_inplace(t, Distribution::Uniform, low, high, "uniform_");
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std) {
  MINIDL_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0,
               "normal_: expected a finite mean and a finite std >= 0, got mean ", mean,
               " and std ", std);
  fill_random_inplace(t, Distribution::Normal, mean, std, "normal_");
  return t;
}

}  // namespace minidl
