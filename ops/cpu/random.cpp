#include <algorithm>

#include "minidl/core/parallel.h"
#include "minidl/core/philox.h"
#include "minidl/ops/random_kernels.h"
#include "minidl/ops/random_math.h"

namespace minidl::cpu {

namespace {
// Philox costs ~40 integer operations per element, so threads pay off sooner than for copies.
constexpr int64_t kRandomGrain = 8192;

void uniform_kernel(const Tensor& out, double low, double high, GeneratorState start) {
  visit_floating(out.dtype(), "uniform_", [&](auto zero) {
    using T = decltype(zero);
    using Compute = typename philox::DrawTraits<T>::Compute;
    const auto low_c = static_cast<Compute>(low), high_c = static_cast<Compute>(high);
    const Compute span = high_c - low_c;
    T* data = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = philox::uniform_element<T>(start.seed, start.offset + static_cast<uint64_t>(i),
                                             low_c, span, high_c);
    });
  });
}

void normal_kernel(const Tensor& out, double mean, double std, GeneratorState start) {
  visit_floating(out.dtype(), "normal_", [&](auto zero) {
    using T = decltype(zero);
    T* data = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = philox::normal_element<T>(start.seed, start.offset + static_cast<uint64_t>(i),
                                            mean, std);
    });
  });
}

void multinomial_with_replacement_kernel(const Tensor& out, const Tensor& weights,
                                         GeneratorState start) {
  const int64_t rows = weights.size(0), categories = weights.size(1), samples = out.size(1);
  visit_floating(weights.dtype(), "multinomial", [&](auto zero) {
    using T = decltype(zero);
    const T* weight_rows = static_cast<const T*>(weights.data_ptr());
    int64_t* drawn = static_cast<int64_t*>(out.data_ptr());
    // A task takes whole rows: each draw walks its row, so a row's cost is samples * categories.
    const int64_t grain = std::max<int64_t>(1, kRandomGrain / std::max<int64_t>(1, samples));
    parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T* row_weights = weight_rows + row * categories;
        const double total = random_math::weight_total(row_weights, categories);
        for (int64_t s = 0; s < samples; ++s) {
          const uint64_t draw = static_cast<uint64_t>(row * samples + s);
          const double u = random_math::unit_uniform(start.seed, start.offset + draw);
          drawn[row * samples + s] =
              random_math::inverse_cdf_category(row_weights, categories, total, u);
        }
      }
    });
  });
}

void exponential_race_keys_kernel(const Tensor& keys, const Tensor& weights, GeneratorState start) {
  visit_floating(weights.dtype(), "multinomial", [&](auto zero) {
    using T = decltype(zero);
    const T* weight_data = static_cast<const T*>(weights.data_ptr());
    float* key_data = static_cast<float*>(keys.data_ptr());
    parallel_for(0, weights.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        key_data[i] =
            random_math::exponential_race_key(random_math::weight_value(weight_data[i]), start.seed,
                                              start.offset + static_cast<uint64_t>(i));
    });
  });
}

void random_integers_kernel(const Tensor& out, int64_t low, uint64_t range, GeneratorState start) {
  int64_t* data = static_cast<int64_t*>(out.data_ptr());
  parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      data[i] = random_math::random_integer(start.seed, start.offset + static_cast<uint64_t>(i),
                                            low, range);
  });
}

void bernoulli_kernel(const Tensor& out, const Tensor& probabilities, GeneratorState start) {
  visit_floating(out.dtype(), "bernoulli", [&](auto zero) {
    using T = decltype(zero);
    const T* p = static_cast<const T*>(probabilities.data_ptr());
    T* data = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = static_cast<T>(
            random_math::bernoulli_draw(start.seed, start.offset + static_cast<uint64_t>(i),
                                        random_math::weight_value(p[i]))
                ? 1.0f
                : 0.0f);
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const RandomKernels RandomKernels::kCpu{
    .uniform = cpu::uniform_kernel,
    .normal = cpu::normal_kernel,
    .multinomial_with_replacement = cpu::multinomial_with_replacement_kernel,
    .exponential_race_keys = cpu::exponential_race_keys_kernel,
    .random_integers = cpu::random_integers_kernel,
    .bernoulli = cpu::bernoulli_kernel,
};

}  // namespace minidl
