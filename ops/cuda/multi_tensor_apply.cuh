#pragma once
// The CUDA side of Note [Multi-tensor apply] (ops/multi_tensor_table.h; include from .cu files
// only): every tensor of one (device, dtype) in one launch. The element functor convention is
// written once in ops/cpu/multi_tensor_apply.h; the same functor runs on both backends, so the
// CPU tests check the arithmetic the GPU runs.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/error.h"
#include "minidl/core/half.h"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::cuda {

// A chunk is kMultiTensorChunkElements / kMultiTensorBlockThreads = 64 elements per thread.
inline constexpr int kMultiTensorBlockThreads = 256;
// Resident blocks per multiprocessor: 2048 threads / 256 per block.
inline constexpr int kMultiTensorBlocksPerMultiprocessor = 8;

// ---- kernels ----

// Chunk c of a table in device memory, as a kernel reads it: the functor for its tensor (built
// per chunk, since the chunks of one block belong to different tensors) and its element range.
template <class Functor>
struct TableChunk {
  __device__ TableChunk(const std::byte* table, const MultiTensorLayout& layout, int64_t c)
      : chunk(reinterpret_cast<const MultiTensorChunk*>(table + layout.chunks_offset)[c]),
        entry(
            reinterpret_cast<const TensorListEntry*>(table + layout.tensors_offset)[chunk.tensor]),
        op(reinterpret_cast<const typename Functor::Group*>(table +
                                                            layout.groups_offset)[entry.group],
           entry),
        end(min(chunk.begin + kMultiTensorChunkElements, entry.numel)) {}
  MultiTensorChunk chunk;
  TensorListEntry entry;
  Functor op;
  int64_t end;  // one past the chunk's last element
};

// Each block takes chunks in a grid-stride loop; its threads stride through the chunk, so
// consecutive threads touch consecutive elements.
template <class Functor>
__global__ void multi_tensor_apply_kernel(const std::byte* table, MultiTensorLayout layout,
                                          const float* skip_flag) {
  if (skip_flag != nullptr && *skip_flag != 0.0f) return;  // GradScaler skips this step
  for (int64_t c = blockIdx.x; c < layout.num_chunks; c += gridDim.x) {
    const TableChunk<Functor> part(table, layout, c);
    for (int64_t i = part.chunk.begin + threadIdx.x; i < part.end; i += blockDim.x) part.op(i);
  }
}

// ---- launchers ----

// Runs Op<T> over every tensor of the table at args.table (device memory), T being args.dtype
// (float32, float16 or bfloat16; another is an error naming `op_name`), in one launch on the
// current stream of args.device_index. Never waits for the device; when args.skip_flag (device
// memory) is nonzero the kernel returns without changing anything.
template <template <class> class Op>
void launch_multi_tensor_apply(const MultiTensorArgs& args, const char* op_name) {
  if (args.layout.num_chunks == 0) return;
  DeviceGuard device_guard(args.device_index);
  // One block per chunk, at most as many as the device holds at once.
  const unsigned blocks = resident_grid_stride_blocks(
      args.layout.num_chunks * kMultiTensorBlockThreads, kMultiTensorBlockThreads,
      kMultiTensorBlocksPerMultiprocessor, args.device_index);
  const StreamHandle stream = current_stream_handle(args.device_index);
  visit_device_floating(args.dtype, op_name, [&](auto zero) {
    multi_tensor_apply_kernel<Op<decltype(zero)>>
        <<<blocks, kMultiTensorBlockThreads, 0, stream>>>(args.table, args.layout, args.skip_flag);
  });
  MINIDL_LAUNCH_CHECK();
}

}  // namespace minidl::cuda
