#pragma once
// GradScaler's CPU scale update (the math is in optim/amp_math.h; the CUDA form, which also
// writes a host mirror, is in optim/cuda/amp_kernel.h). The unscale is a kernel table:
// optim/amp_kernels.h.
#include "minidl/core/tensor.h"
#include "minidl/optim/amp_math.h"

namespace minidl::cpu {

// One update of scale (float32), growth_tracker and consecutive_skips (int32), all one-element,
// from found_inf (float32, nonzero for a skipped step).
void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker,
                      const Tensor& consecutive_skips, const Tensor& found_inf,
                      const optim::ScaleUpdateParameters& parameters);

}  // namespace minidl::cpu
