#pragma once
// GradScaler's CUDA kernels (the math is in optim/amp_math.h; the CPU twins are in
// optim/cpu/amp_kernel.h). Everything runs on the current stream of the tensors' device and
// never waits for the device.
#include <cstdint>
#include <memory>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/optim/amp_math.h"

namespace minidl::cuda {

// Multiplies every gradient (dense; float32, float16 or bfloat16; all on scale's device) by
// 1 / scale and sets found_inf (float32, one element) to 1 when any unscaled element is inf or
// NaN, in one multi-tensor launch per gradient dtype (one for a float32 model): the check is
// fused into the unscale. found_inf is not cleared here: the caller zeroes it once per step.
// The table of gradient pointers goes to the device through pinned memory, asynchronously.
void amp_unscale_and_check(const std::vector<Tensor>& grads, const Tensor& scale,
                           const Tensor& found_inf);

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
