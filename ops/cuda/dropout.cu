// CUDA dropout: one thread per element, each drawing its keep/drop decision from its own
// Philox counter with the same function as the CPU (ops/dropout_math.h), so masks match the
// CPU's for the same generator state.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/cuda.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/cuda/dropout.h"
#include "minidl/ops/dropout_math.h"

namespace minidl::cuda {

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 65536;  // the grid-stride loop covers the rest

// out, in: (numel) contiguous.
template <class T>
__global__ void dropout_elements(T* out, const T* in, int64_t numel, double p, float scale,
                                 uint64_t seed, uint64_t offset) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    const bool kept = dropout::keeps(seed, offset + static_cast<uint64_t>(i), p);
    out[i] = dropout::masked_scale(in[i], kept, scale);
  }
}

}  // namespace

void dropout_kernel(const Tensor& out, const Tensor& input, double p, GeneratorState start) {
  const int64_t numel = input.numel();
  if (numel == 0) return;
  const int device = input.device().index;
  DeviceGuard device_guard(device);
  check_not_capturing(device, "dropout on CUDA",
                      "its mask comes from a Philox counter offset that advances on the host, so "
                      "every replay would drop the elements of the captured step again; run steps "
                      "with dropout eagerly (TrainerOptions::cuda_graph(false), bench "
                      "--cuda-graph off)");
  const StreamHandle stream = current_stream_handle(device);
  const auto blocks = static_cast<unsigned>(
      std::min<int64_t>((numel + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
  // float for float32 and the 16-bit types, as on the CPU (float64 never reaches the GPU).
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  visit_floating(input.dtype(), "dropout", [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, double>) {
      MINIDL_INTERNAL_ASSERT(false, "a float64 tensor on a CUDA device");
    } else {
      dropout_elements<T><<<blocks, kThreadsPerBlock, 0, stream>>>(
          out.data_ptr<T>(), input.data_ptr<T>(), numel, p, scale, start.seed, start.offset);
      MINIDL_LAUNCH_CHECK();
    }
  });
}

}  // namespace minidl::cuda
