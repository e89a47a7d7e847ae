#pragma once
// GradScaler's CUDA scale update and its host mirror (the math is in optim/amp_math.h; the CPU
// update is in optim/cpu/amp_kernel.h). The unscale is a kernel table: optim/amp_kernels.h.
// Everything runs on the current stream of the tensors' device and never waits for the device.
#include <cstdint>
#include <memory>

#include "minidl/core/tensor.h"
#include "minidl/optim/amp_math.h"

namespace minidl::cuda {

// One single-thread launch: updates scale, growth_tracker and consecutive_skips (on the device)
// from found_inf, and writes consecutive_skips to `skips_mirror` as well (see
// make_host_mirror_int32), so the host can watch it without a copy.
void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker,
                      const Tensor& consecutive_skips, const Tensor& found_inf,
                      const optim::ScaleUpdateParameters& parameters, int32_t* skips_mirror);

// One int32 in mapped pinned host memory, set to `initial`: kernels on any device write it
// directly (no copy), and the host reads it without a sync, seeing what the kernels already
// run have written (a value that lags the queued work).
std::shared_ptr<int32_t> make_host_mirror_int32(int32_t initial);

}  // namespace minidl::cuda
