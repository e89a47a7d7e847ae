// The CUDA kernels of gradient clipping (conventions in nn/utils/clip_grad_kernels.h, math and
// functors in nn/utils/clip_grad_math.h). clip_grad_norm_ on one device is, per dtype of its
// gradients, one multi-tensor reduction launch (a partial per chunk,
// ops/cuda/multi_tensor_reduce.cuh); then one single-block kernel that turns the partials into
// each tensor's norm, the total and the clip coefficient; then, per dtype, one multi-tensor
// launch that scales every gradient by the coefficient it reads from device memory. The host
// never waits.
#include <cuda_runtime.h>

#include <cstdint>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/nn/utils/clip_grad_kernels.h"
#include "minidl/nn/utils/clip_grad_math.h"
#include "minidl/ops/cuda/multi_tensor_apply.cuh"
#include "minidl/ops/cuda/multi_tensor_reduce.cuh"

namespace minidl::nn::utils {

namespace {

constexpr const char* kNormOp = "clip_grad_norm_";
// The finishing kernel's one block: each thread takes every blockDim.x-th chunk.
constexpr int kFinishThreads = 256;

// ---- kernels ----

// From the partials of every table: each tensor's norm (its chunks' partials combined in chunk
// order, rounded to its dtype), the norm of those in R, and the coefficient. A tensor's chunks
// are consecutive in its table, the first beginning at element 0; the thread that meets that
// first chunk combines them all.
template <class R>
__global__ void clip_finish_norm_kernel(NormFinishArgs args, const float* partials, R* total_norm,
                                        float* clip_coef) {
  const GradNormOp<float> op(args.norm_type);
  float acc = op.identity();
  for (int32_t g = 0; g < args.num_tables; ++g) {
    const NormTablePart part = args.tables[g];
    const auto* chunks =
        reinterpret_cast<const MultiTensorChunk*>(part.table + part.layout.chunks_offset);
    const auto* tensors =
        reinterpret_cast<const TensorListEntry*>(part.table + part.layout.tensors_offset);
    for (int64_t c = threadIdx.x; c < part.layout.num_chunks; c += blockDim.x) {
      const MultiTensorChunk chunk = chunks[c];
      if (chunk.begin != 0) continue;
      const int64_t count =
          (tensors[chunk.tensor].numel + kMultiTensorChunkElements - 1) / kMultiTensorChunkElements;
      const float norm =
          tensor_norm_from_partials(partials + part.partials_offset + c, count, op, part.dtype);
      acc = op.combine(acc, op.term(norm));
    }
  }
  acc = cuda::row_reduce(op, acc);
  if (threadIdx.x == 0) {
    const R total = R(op.root(acc));
    *total_norm = total;
    *clip_coef = clip_coefficient<R>(total, args.max_norm);
  }
}

// ---- launchers ----

void clip_reduce_chunks(const MultiTensorArgs& args, const Tensor& partials) {
  cuda::launch_multi_tensor_reduce<ClipNormTermOp>(args, partials.data_ptr(), kNormOp);
}

void clip_finish_norm(const NormFinishArgs& args, const Tensor& partials, const Tensor& total_norm,
                      const Tensor& clip_coef) {
  cuda::DeviceGuard device_guard(args.device_index);
  const cuda::StreamHandle stream = cuda::current_stream_handle(args.device_index);
  const auto* partial = partials.data_ptr<float>();
  float* coefficient = clip_coef.data_ptr<float>();
  cuda::visit_device_floating(total_norm.dtype(), kNormOp, [&](auto zero) {
    using T = decltype(zero);
    clip_finish_norm_kernel<T>
        <<<1, kFinishThreads, 0, stream>>>(args, partial, total_norm.data_ptr<T>(), coefficient);
  });
  MINIDL_LAUNCH_CHECK();
}

void clip_scale(const MultiTensorArgs& args) {
  cuda::launch_multi_tensor_apply<ClipScaleOp>(args, kNormOp);
}

void clip_clamp(const MultiTensorArgs& args) {
  cuda::launch_multi_tensor_apply<ClipClampOp>(args, "clip_grad_value_");
}

}  // namespace

const ClipGradKernels ClipGradKernels::kCuda{
    .reduce_chunks = clip_reduce_chunks,
    .finish_norm = clip_finish_norm,
    .scale = clip_scale,
    .clamp = clip_clamp,
};

}  // namespace minidl::nn::utils
