// Random tensors: validation and dispatch. The values come from the global Philox generator
// (core/generator.h); kernels in ops/random_kernels.h.
#include "minidl/ops/random.h"

#include <cmath>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/generator.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random_kernels.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"

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
  const ProfileScope profile(op, {t});
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

// a, b: low and high of a uniform, mean and std of a normal.
Tensor random_tensor(const Shape& sizes, const TensorOptions& options, Distribution distribution,
                     const char* op, double a, double b) {
  const ProfileScope profile(op);
  visit_floating(options.dtype(), op, [](auto) {});
  Tensor out = empty(sizes, TensorOptions(options).requires_grad(false));
  fill_random(out, distribution, a, b);
  if (options.requires_grad()) out.requires_grad_(true);
  return out;
}

// probs [rows, categories], contiguous: PyTorch's checks of multinomial's weights, from four
// numbers read back in one copy.
void check_multinomial_weights(const Tensor& weights, int64_t num_samples, bool replacement) {
  NoGradGuard no_grad;
  const Tensor row_sums = sum(weights, {1});
  const Tensor positive_counts = sum(gt(weights, 0.0), {1});
  // float32 holds every count below 2^24 and every 16-bit weight; float64 weights stay float64.
  const DType summary_dtype = weights.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const std::vector<double> summary = to_vector<double>(stack({
      max(weights).to(summary_dtype),
      min(weights).to(summary_dtype),
      min(row_sums).to(summary_dtype),
      min(positive_counts).to(summary_dtype),
  }));
  const double largest = summary[0], smallest = summary[1], smallest_row_sum = summary[2],
               fewest_positive = summary[3];
  MINIDL_CHECK(std::isfinite(largest) && std::isfinite(smallest),
               "multinomial: probability tensor contains either inf, nan or element < 0 (got a ",
               "weight of ", std::isfinite(largest) ? smallest : largest, ")");
  MINIDL_CHECK(smallest >= 0,
               "multinomial: probability tensor contains either inf, nan or element < 0 (got a ",
               "weight of ", smallest, ")");
  MINIDL_CHECK(smallest_row_sum > 0,
               "multinomial: invalid multinomial distribution (sum of probabilities <= 0): a row "
               "of probs sums to 0");
  MINIDL_CHECK(replacement || fewest_positive >= static_cast<double>(num_samples),
               "multinomial: invalid multinomial distribution (with replacement=False, not "
               "enough non-negative category to sample): a row has ",
               fewest_positive, " positive weights, num_samples is ", num_samples);
}

}  // namespace

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Tensor rand(const Shape& sizes, TensorOptions options) {
  return random_tensor(sizes, options, Distribution::Uniform, "rand", 0, 1);
}

Tensor randn(const Shape& sizes, TensorOptions options) {
  return random_tensor(sizes, options, Distribution::Normal, "randn", 0, 1);
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

Tensor normal(double mean, double std, const Shape& sizes, TensorOptions options) {
  MINIDL_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0,
               "normal: expected a finite mean and a finite std >= 0, got mean ", mean, " and std ",
               std);
  return random_tensor(sizes, options, Distribution::Normal, "normal", mean, std);
}

Tensor rand_like(const Tensor& t) {
  check_defined(t, "rand_like", "input");
  return rand(t.sizes(), t.options());
}

Tensor randn_like(const Tensor& t) {
  check_defined(t, "randn_like", "input");
  return randn(t.sizes(), t.options());
}

Tensor randint(int64_t low, int64_t high, const Shape& sizes, const TensorOptions options) {
  const ProfileScope profile("randint");
  MINIDL_CHECK(low < high, "randint: expected low < high, got the range [", low, ", ", high, ")");
  MINIDL_CHECK(options.dtype() != kBool, "randint: expected a numeric dtype, got bool");
  MINIDL_CHECK(!options.requires_grad(), "randint: integer draws cannot require grad");
  Tensor drawn = empty(sizes, TensorOptions(kInt64).device(options.device()));
  // high - low as unsigned: the span of [INT64_MIN, INT64_MAX) does not fit int64.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const GeneratorState start = default_generator().reserve(static_cast<uint64_t>(drawn.numel()));
  if (drawn.numel() > 0)
    kernels_for<RandomKernels>(drawn.device()).random_integers(drawn, low, range, start);
  return options.dtype() == kInt64 ? drawn : drawn.to(options.dtype());
}

Tensor randint(int64_t high, const Shape& sizes, TensorOptions options) {
  return randint(0, high, sizes, options);
}

Tensor bernoulli(const Tensor& p) {
  const ProfileScope profile("bernoulli", {p});
  check_defined(p, "bernoulli", "p");
  visit_floating(p.dtype(), "bernoulli", [](auto) {});
  NoGradGuard no_grad;  // not differentiable
  const Tensor probabilities = p.contiguous();
  if (probabilities.numel() > 0) {
    const std::vector<double> bounds =
        to_vector<double>(stack({min(probabilities), max(probabilities)}));
    MINIDL_CHECK(bounds[0] >= 0 && bounds[1] <= 1,
                 "bernoulli: expected probabilities in [0, 1], got values in [", bounds[0], ", ",
                 bounds[1], "]");
  }
  Tensor out = empty(p.sizes(), p.options());
  const GeneratorState start = default_generator().reserve(static_cast<uint64_t>(out.numel()));
  if (out.numel() > 0) kernels_for<RandomKernels>(p.device()).bernoulli(out, probabilities, start);
  return out;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  const ProfileScope profile("multinomial", {probs});
  check_defined(probs, "multinomial", "probs");
  MINIDL_CHECK(probs.dim() == 1 || probs.dim() == 2,
               "multinomial: expected probs of 1 or 2 dims, got shape ", probs.sizes());
  visit_floating(probs.dtype(), "multinomial", [](auto) {});
  MINIDL_CHECK(num_samples > 0, "multinomial: cannot sample num_samples <= 0 samples, got ",
               num_samples);
  NoGradGuard no_grad;  // not differentiable
  const Tensor weights = (probs.dim() == 1 ? probs.unsqueeze(0) : probs).contiguous();
  const int64_t rows = weights.size(0), categories = weights.size(1);
  MINIDL_CHECK(categories > 0, "multinomial: probs has no categories (shape ", probs.sizes(), ")");
  MINIDL_CHECK(replacement || num_samples <= categories,
               "multinomial: cannot sample num_samples > probs.size(-1) samples without ",
               "replacement (num_samples = ", num_samples, ", ", categories, " categories)");
  Tensor drawn;
  if (rows > 0) {
    check_multinomial_weights(weights, num_samples, replacement);
    const RandomKernels& kernels = kernels_for<RandomKernels>(weights.device());
    if (replacement && num_samples > 1) {
      drawn = empty({rows, num_samples}, TensorOptions(kInt64).device(weights.device()));
      kernels.multinomial_with_replacement(
          drawn, weights, default_generator().reserve(static_cast<uint64_t>(drawn.numel())));
    } else {
      // One draw is the same with or without replacement: the race's winner, found by a
      // reduction over the row (min keeps the first of equal keys, as topk's order does)
      // rather than by a walk along it, as PyTorch's fast path for one sample.
      Tensor keys = empty({rows, categories}, TensorOptions(kFloat32).device(weights.device()));
      kernels.exponential_race_keys(
          keys, weights, default_generator().reserve(static_cast<uint64_t>(keys.numel())));
      drawn = num_samples == 1 ? std::get<1>(min(keys, 1, /*keepdim=*/true))
                               : std::get<1>(topk(keys, num_samples, 1, /*largest=*/false));
    }
  } else {
    drawn = empty({0, num_samples}, TensorOptions(kInt64).device(weights.device()));
  }
  return probs.dim() == 1 ? drawn.squeeze(0) : drawn;
}

}  // namespace minidl
