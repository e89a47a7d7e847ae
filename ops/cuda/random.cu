// CUDA kernels of ops/random.h: one thread per element, each drawing from its own Philox
// counter with the same functions as the CPU (core/philox.h), so values match the CPU's.
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/philox.h"
#include "minidl/ops/random_kernels.h"

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
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step)
    out[i] = philox::uniform_element<T>(seed, offset + static_cast<uint64_t>(i), low, span, high);
}

// out: (numel) contiguous.
template <class T>
__global__ void normal_fill_kernel(T* out, int64_t numel, uint64_t seed, uint64_t offset,
                                   double mean, double std) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step)
    out[i] = philox::normal_element<T>(seed, offset + static_cast<uint64_t>(i), mean, std);
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

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const RandomKernels RandomKernels::kCuda{
    .uniform = cuda::uniform_kernel,
    .normal = cuda::normal_kernel,
};

}  // namespace minidl
