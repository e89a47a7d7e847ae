#pragma once
// The fused CUDA SGD step (Note [Fused SGD table] in optim/fused_sgd_table.h).
#include "minidl/core/dtype.h"
#include "minidl/optim/fused_sgd_table.h"

namespace minidl::cuda {

// Updates every tensor of the table at `device_table` (device memory laid out as `layout`; all
// tensors of `dtype`: float32, float16 or bfloat16) in one launch on the current stream of
// `device`. Does not wait for the device. When `found_inf` (a float32 in device memory, from
// GradScaler) is given and nonzero, the kernel returns without changing anything, so a step
// with inf or NaN gradients is skipped without the host reading the flag.
void launch_fused_sgd(DType dtype, const void* device_table, const optim::FusedSgdLayout& layout,
                      int device, const float* found_inf = nullptr);

}  // namespace minidl::cuda
