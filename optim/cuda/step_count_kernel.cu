// The per-parameter step counts on CUDA (optim/multi_tensor_kernels.h): one thread per tensor of
// the table, in a launch before the update that reads the counts.
#include <cuda_runtime.h>

#include <cstddef>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/multi_tensor_table.h"
#include "minidl/optim/multi_tensor_kernels.h"

namespace minidl::cuda {
namespace {

// ---- kernels ----

__global__ void increment_step_counts_kernel(const std::byte* table, MultiTensorLayout layout,
                                             int list, const float* skip_flag) {
  if (skip_flag != nullptr && *skip_flag != 0.0f) return;  // GradScaler skips this step
  const auto* tensors = reinterpret_cast<const TensorListEntry*>(table + layout.tensors_offset);
  for (const int64_t t : grid_stride_range(layout.num_tensors))
    *static_cast<float*>(tensors[t].data[list]) += 1.0f;
}

// ---- launchers ----

void increment_step_counts(const MultiTensorArgs& args, int list) {
  if (args.layout.num_tensors == 0) return;
  DeviceGuard device_guard(args.device_index);
  const unsigned blocks = resident_grid_stride_blocks(args.layout.num_tensors, kThreadsPerBlock,
                                                      kBlocksPerMultiprocessor, args.device_index);
  increment_step_counts_kernel<<<blocks, kThreadsPerBlock, 0,
                                 current_stream_handle(args.device_index)>>>(
      args.table, args.layout, list, args.skip_flag);
  MINIDL_LAUNCH_CHECK();
}

}  // namespace
}  // namespace minidl::cuda

namespace minidl::optim {

const StepCountKernels StepCountKernels::kCuda{
    .increment = cuda::increment_step_counts,
};

}  // namespace minidl::optim
