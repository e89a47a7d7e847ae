#pragma once
// Multi-tensor reductions (include from .cu files only): every chunk of a multi-tensor table
// (Note [Multi-tensor apply] in ops/multi_tensor_table.h) reduced to one accumulator, for every
// tensor of one (device, dtype) in one launch. What a caller makes of the per-chunk partials (a
// norm per tensor, a total) is its own second, small kernel.
//
// Reduction functor convention: the element functor of ops/cpu/multi_tensor_apply.h, whose call
// returns element i's contribution instead of updating it, plus the accumulator and its merge as
// core/cuda/block_reduce.cuh expects them:
//
//   template <class T>
//   class SumOfSquaresOp {
//    public:
//     using Group = ...;  // the table's trivially copyable per-group record
//     using Acc = float;  // trivially copyable
//     MINIDL_HOST_DEVICE SumOfSquaresOp(const Group& group, const TensorListEntry& entry);
//     MINIDL_HOST_DEVICE Acc identity() const;
//     MINIDL_HOST_DEVICE Acc combine(Acc a, Acc b) const;
//     MINIDL_HOST_DEVICE Acc operator()(int64_t i) const;  // element i's contribution
//   };
//
// Each thread of a block combines the elements it strides over, in order; the block's threads
// are then merged in block_reduce.cuh's fixed tree. So a chunk's partial repeats exactly from
// run to run (no atomics), whatever the grid size.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/error.h"
#include "minidl/core/half.h"
#include "minidl/ops/cuda/multi_tensor_apply.cuh"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::cuda {

// ---- kernels ----

// partials[c] = Functor's reduction of chunk c, for every chunk of the table. Blocks take chunks
// in a grid-stride loop (every thread of a block runs the same iterations, so all of them reach
// the block reduction).
template <class Functor>
__global__ void multi_tensor_reduce_kernel(const std::byte* table, MultiTensorLayout layout,
                                           typename Functor::Acc* partials) {
  for (int64_t c = blockIdx.x; c < layout.num_chunks; c += gridDim.x) {
    const TableChunk<Functor> part(table, layout, c);
    typename Functor::Acc acc = part.op.identity();
    for (int64_t i = part.chunk.begin + threadIdx.x; i < part.end; i += blockDim.x)
      acc = part.op.combine(acc, part.op(i));
    acc = row_reduce(part.op, acc);
    if (threadIdx.x == 0) partials[c] = acc;
  }
}

// ---- launchers ----

// Writes Op<T>'s reduction of every chunk of the table at args.table (device memory) to
// partials[0, args.layout.num_chunks) (device memory of Op<T>::Acc), T being args.dtype
// (float32, float16 or bfloat16; another is an error naming `op_name`), in one launch on the
// current stream of args.device_index. Never waits for the device. args.skip_flag is not read:
// a reduction changes nothing that a skipped step would have to keep.
template <template <class> class Op>
void launch_multi_tensor_reduce(const MultiTensorArgs& args, void* partials, const char* op_name) {
  if (args.layout.num_chunks == 0) return;
  DeviceGuard device_guard(args.device_index);
  // One block per chunk, at most as many as the device holds at once.
  const unsigned blocks = resident_grid_stride_blocks(
      args.layout.num_chunks * kMultiTensorBlockThreads, kMultiTensorBlockThreads,
      kMultiTensorBlocksPerMultiprocessor, args.device_index);
  const StreamHandle stream = current_stream_handle(args.device_index);
  const auto launch = [&](auto zero) {
    using Functor = Op<decltype(zero)>;
    multi_tensor_reduce_kernel<Functor><<<blocks, kMultiTensorBlockThreads, 0, stream>>>(
        args.table, args.layout, static_cast<typename Functor::Acc*>(partials));
  };
  visit_device_floating(args.dtype, op_name, launch);
  MINIDL_LAUNCH_CHECK();
}

}  // namespace minidl::cuda
