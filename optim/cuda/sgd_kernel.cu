// The fused SGD kernel: every parameter of one (device, dtype) in one launch, reading the table
// described in Note [Fused SGD table] (optim/fused_sgd_table.h). The per-element math is
// optim/sgd_math.h, shared with the CPU loop.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/cuda.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/cuda/loops.cuh"
#include "minidl/optim/cuda/sgd_kernel.h"

namespace minidl::cuda {

using optim::FusedSgdLayout;
using optim::SgdChunk;
using optim::SgdCoefficients;
using optim::SgdGroupParameters;
using optim::SgdTensorEntry;

namespace {

// ---- kernels ----

// Each block takes chunks in a grid-stride loop; its threads stride through the chunk, so
// consecutive threads touch consecutive elements.
template <class T>
__global__ void fused_sgd_kernel(const std::byte* table, FusedSgdLayout layout,
                                 const float* found_inf) {
  if (found_inf != nullptr && *found_inf != 0.0f) return;  // GradScaler skips this step
  using Acc = optim::sgd_acc_t<T>;
  const auto* groups = reinterpret_cast<const SgdGroupParameters*>(table + layout.groups_offset);
  const auto* tensors = reinterpret_cast<const SgdTensorEntry*>(table + layout.tensors_offset);
  const auto* chunks = reinterpret_cast<const SgdChunk*>(table + layout.chunks_offset);
  for (int64_t c = blockIdx.x; c < layout.num_chunks; c += gridDim.x) {
    const SgdChunk chunk = chunks[c];
    const SgdTensorEntry entry = tensors[chunk.tensor];
    const SgdCoefficients<Acc> coefficients(groups[entry.group]);
    auto* param = static_cast<T*>(entry.param);
    const auto* grad = static_cast<const T*>(entry.grad);
    auto* buffer = static_cast<T*>(entry.momentum_buffer);
    const int64_t end = min(chunk.begin + optim::kSgdChunkElements, entry.numel);
    for (int64_t i = chunk.begin + threadIdx.x; i < end; i += blockDim.x)
      optim::sgd_update_element<T>(param, grad, buffer, i, coefficients, entry.buffer_state);
  }
}

}  // namespace

// ---- launchers ----

void launch_fused_sgd(DType dtype, const void* device_table, const FusedSgdLayout& layout,
                      int device, const float* found_inf) {
  if (layout.num_chunks == 0) return;
  DeviceGuard device_guard(device);
  // One block per chunk, at most as many as the device holds at once.
  const unsigned blocks = grid_size(layout.num_chunks * kThreadsPerBlock, device);
  const StreamHandle stream = current_stream_handle(device);
  const auto* table = static_cast<const std::byte*>(device_table);
  switch (dtype) {
    case kFloat32:
      fused_sgd_kernel<float><<<blocks, kThreadsPerBlock, 0, stream>>>(table, layout, found_inf);
      break;
    case kFloat16:
      fused_sgd_kernel<Half><<<blocks, kThreadsPerBlock, 0, stream>>>(table, layout, found_inf);
      break;
    case kBFloat16:
      fused_sgd_kernel<BFloat16><<<blocks, kThreadsPerBlock, 0, stream>>>(table, layout, found_inf);
      break;
    default:
      MINIDL_CHECK(false, "SGD step on CUDA: expected float32, float16 or bfloat16 parameters, ",
                   "got ", dtype);
  }
  MINIDL_LAUNCH_CHECK();
}

}  // namespace minidl::cuda
