// CUDA dropout: one thread per element, each drawing its keep/drop decision from its own
// Philox counter with the same function as the CPU (ops/dropout_math.h), so masks match the
// CPU's for the same generator state.
#include <cuda_runtime.h>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/dropout_kernels.h"
#include "minidl/ops/dropout_math.h"

namespace minidl::cuda {

namespace {

constexpr int64_t kMaxBlocks = 65536;  // the grid-stride loop covers the rest

// out, in: (numel) contiguous.
template <class T>
__global__ void dropout_elements(T* out, const T* in, int64_t numel, double p, float scale,
                                 uint64_t seed, uint64_t offset) {
  for (const int64_t i : grid_stride_range(numel)) {
    const bool kept = dropout::keeps(seed, offset + static_cast<uint64_t>(i), p);
    out[i] = dropout::masked_scale(in[i], kept, scale);
  }
}

void dropout_kernel(const Tensor& out, const Tensor& input, double p, GeneratorState start) {
  const int64_t numel = input.numel();
  if (numel == 0) return;
  LaunchContext context(input);
  check_not_capturing(context.device, "dropout on CUDA",
                      "its mask comes from a Philox counter offset that advances on the host, so "
                      "every replay would drop the elements of the captured step again; run steps "
                      "with dropout eagerly (TrainerOptions::cuda_graph(false), bench "
                      "--cuda-graph off)");
  const unsigned blocks = grid_stride_blocks(numel, kThreadsPerBlock, kMaxBlocks);
  // float for float32 and the 16-bit types, as on the CPU (float64 never reaches the GPU).
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  visit_device_floating(input.dtype(), "dropout", [&](auto zero) {
    using T = decltype(zero);
    dropout_elements<T><<<blocks, kThreadsPerBlock, 0, context.stream>>>(
        out.data_ptr<T>(), input.data_ptr<T>(), numel, p, scale, start.seed, start.offset);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const DropoutKernels DropoutKernels::kCuda{.dropout = cuda::dropout_kernel};

}  // namespace minidl
