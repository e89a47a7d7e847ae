// CUDA kernels of ops/random.h: one thread per element, each drawing from its own Philox
// counter with the same functions as the CPU (core/philox.h), so values match the CPU's.
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/philox.h"
#include "minidl/ops/random_kernels.h"
#include "minidl/ops/random_math.h"

namespace minidl::cuda {

namespace {

constexpr int64_t kMaxBlocks = 65536;  // the grid-stride loop covers the rest

unsigned int grid_for(int64_t numel) {
  return grid_stride_blocks(numel, kThreadsPerBlock, kMaxBlocks);
}

// out: (numel) contiguous.
template <class T, class Compute>
__global__ void uniform_fill_kernel(T* out, int64_t numel, uint64_t seed, uint64_t offset,
                                    Compute low, Compute span, Compute high) {
  for (const int64_t i : grid_stride_range(numel))
    out[i] = philox::uniform_element<T>(seed, offset + static_cast<uint64_t>(i), low, span, high);
}

// out: (numel) contiguous.
template <class T>
__global__ void normal_fill_kernel(T* out, int64_t numel, uint64_t seed, uint64_t offset,
                                   double mean, double std) {
  for (const int64_t i : grid_stride_range(numel))
    out[i] = philox::normal_element<T>(seed, offset + static_cast<uint64_t>(i), mean, std);
}

// out: [rows, samples] int64; weights: [rows, categories]. A thread per draw, each walking its
// row (Note [Multinomial draws] in ops/random_math.h): O(categories) per draw, the same
// additions in the same order as the CPU, so the draws are the CPU's.
template <class T>
__global__ void multinomial_with_replacement_cuda_kernel(int64_t* out, const T* weights,
                                                         int64_t rows, int64_t categories,
                                                         int64_t samples, uint64_t seed,
                                                         uint64_t offset) {
  const int64_t draws = rows * samples;
  for (const int64_t d : grid_stride_range(draws)) {
    const T* row_weights = weights + (d / samples) * categories;
    const double total = random_math::weight_total(row_weights, categories);
    const double u = random_math::unit_uniform(seed, offset + static_cast<uint64_t>(d));
    out[d] = random_math::inverse_cdf_category(row_weights, categories, total, u);
  }
}

// keys, weights: (numel) contiguous.
template <class T>
__global__ void exponential_race_keys_cuda_kernel(float* keys, const T* weights, int64_t numel,
                                                  uint64_t seed, uint64_t offset) {
  for (const int64_t i : grid_stride_range(numel))
    keys[i] = random_math::exponential_race_key(random_math::weight_value(weights[i]), seed,
                                                offset + static_cast<uint64_t>(i));
}

// out: (numel) int64.
__global__ void random_integers_cuda_kernel(int64_t* out, int64_t numel, int64_t low,
                                            uint64_t range, uint64_t seed, uint64_t offset) {
  for (const int64_t i : grid_stride_range(numel))
    out[i] = random_math::random_integer(seed, offset + static_cast<uint64_t>(i), low, range);
}

// out, probabilities: (numel) contiguous.
template <class T>
__global__ void bernoulli_cuda_kernel(T* out, const T* probabilities, int64_t numel, uint64_t seed,
                                      uint64_t offset) {
  for (const int64_t i : grid_stride_range(numel))
    out[i] = static_cast<T>(random_math::bernoulli_draw(seed, offset + static_cast<uint64_t>(i),
                                                        random_math::weight_value(probabilities[i]))
                                ? 1.0f
                                : 0.0f);
}

// The generator's offset advances on the host, once per call: replays of a captured draw would
// all repeat the capture's numbers.
constexpr const char* kFrozenOffset =
    "its Philox counter offset advances on the host, so every replay would draw the numbers of "
    "the captured step again";

void uniform_kernel(const Tensor& out, double low, double high, GeneratorState start) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  LaunchContext context(out);
  check_not_capturing(context.device, "uniform_ (rand) on CUDA", kFrozenOffset);
  visit_device_floating(out.dtype(), "uniform_", [&](auto zero) {
    using T = decltype(zero);
    using Compute = typename philox::DrawTraits<T>::Compute;
    const auto low_c = static_cast<Compute>(low), high_c = static_cast<Compute>(high);
    uniform_fill_kernel<T, Compute><<<grid_for(numel), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<T*>(out.data_ptr()), numel, start.seed, start.offset, low_c, high_c - low_c,
        high_c);
    MINIDL_LAUNCH_CHECK();
  });
}

void normal_kernel(const Tensor& out, double mean, double std, GeneratorState start) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  LaunchContext context(out);
  check_not_capturing(context.device, "normal_ (randn) on CUDA", kFrozenOffset);
  visit_device_floating(out.dtype(), "normal_", [&](auto zero) {
    using T = decltype(zero);
    normal_fill_kernel<T><<<grid_for(numel), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<T*>(out.data_ptr()), numel, start.seed, start.offset, mean, std);
    MINIDL_LAUNCH_CHECK();
  });
}

void multinomial_with_replacement_kernel(const Tensor& out, const Tensor& weights,
                                         GeneratorState start) {
  const int64_t rows = weights.size(0), categories = weights.size(1), samples = out.size(1);
  if (rows * samples == 0) return;
  LaunchContext context(weights);
  check_not_capturing(context.device, "multinomial on CUDA", kFrozenOffset);
  visit_device_floating(weights.dtype(), "multinomial", [&](auto zero) {
    using T = decltype(zero);
    multinomial_with_replacement_cuda_kernel<T>
        <<<grid_for(rows * samples), kThreadsPerBlock, 0, context.stream>>>(
            static_cast<int64_t*>(out.data_ptr()), static_cast<const T*>(weights.data_ptr()), rows,
            categories, samples, start.seed, start.offset);
    MINIDL_LAUNCH_CHECK();
  });
}

void exponential_race_keys_kernel(const Tensor& keys, const Tensor& weights, GeneratorState start) {
  const int64_t numel = weights.numel();
  if (numel == 0) return;
  LaunchContext context(weights);
  check_not_capturing(context.device, "multinomial on CUDA", kFrozenOffset);
  visit_device_floating(weights.dtype(), "multinomial", [&](auto zero) {
    using T = decltype(zero);
    exponential_race_keys_cuda_kernel<T><<<grid_for(numel), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<float*>(keys.data_ptr()), static_cast<const T*>(weights.data_ptr()), numel,
        start.seed, start.offset);
    MINIDL_LAUNCH_CHECK();
  });
}

void random_integers_kernel(const Tensor& out, int64_t low, uint64_t range, GeneratorState start) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  LaunchContext context(out);
  check_not_capturing(context.device, "randint on CUDA", kFrozenOffset);
  random_integers_cuda_kernel<<<grid_for(numel), kThreadsPerBlock, 0, context.stream>>>(
      static_cast<int64_t*>(out.data_ptr()), numel, low, range, start.seed, start.offset);
  MINIDL_LAUNCH_CHECK();
}

void bernoulli_kernel(const Tensor& out, const Tensor& probabilities, GeneratorState start) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  LaunchContext context(out);
  check_not_capturing(context.device, "bernoulli on CUDA", kFrozenOffset);
  visit_device_floating(out.dtype(), "bernoulli", [&](auto zero) {
    using T = decltype(zero);
    bernoulli_cuda_kernel<T><<<grid_for(numel), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<T*>(out.data_ptr()), static_cast<const T*>(probabilities.data_ptr()), numel,
        start.seed, start.offset);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const RandomKernels RandomKernels::kCuda{
    .uniform = cuda::uniform_kernel,
    .normal = cuda::normal_kernel,
    .multinomial_with_replacement = cuda::multinomial_with_replacement_kernel,
    .exponential_race_keys = cuda::exponential_race_keys_kernel,
    .random_integers = cuda::random_integers_kernel,
    .bernoulli = cuda::bernoulli_kernel,
};

}  // namespace minidl
