#pragma once
// GradScaler's CPU loops (the math is in optim/amp_math.h; the CUDA twins are in
// optim/cuda/amp_kernel.h).
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/optim/amp_math.h"

namespace minidl::cpu {

// Multiplies every gradient (float32, float64, float16 or bfloat16; dense, all on the CPU) by
// 1 / scale, and sets found_inf (float32, one element) to 1 when any unscaled element is inf or
// NaN. found_inf is not cleared first: the caller zeroes it once per step.
void amp_unscale_and_check(const std::vector<Tensor>& grads, const Tensor& scale,
                           const Tensor& found_inf);

// One update of scale (float32), growth_tracker and consecutive_skips (int32), all one-element,
// from found_inf (float32, nonzero for a skipped step).
void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker,
                      const Tensor& consecutive_skips, const Tensor& found_inf,
                      const optim::ScaleUpdateParameters& parameters);

}  // namespace minidl::cpu
