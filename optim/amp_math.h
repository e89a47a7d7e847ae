#pragma once
// The arithmetic of GradScaler, written once for the CPU loops (optim/cpu/amp_kernel.cpp) and
// the CUDA kernels (optim/cuda/amp_kernel.cu), so the CPU tests check the math the GPU runs.
//
// Unscale: g = g * (1 / scale), computed in float; a gradient element that is inf or NaN
// after the multiply (so inf or NaN before it, or overflowing a 16-bit gradient) marks the
// step as non-finite. The multiply still happens: the step is skipped anyway.
//
// Update, after every step (PyTorch's _amp_update_scale_):
//   non-finite step:  scale = max(scale * backoff_factor, min_scale), growth_tracker = 0,
//                     consecutive_skips += 1
//   finite step:      growth_tracker += 1, consecutive_skips = 0, and after growth_interval
//                     finite steps in a row scale = scale * growth_factor (when that is finite)
//                     and growth_tracker = 0
#include <cmath>
#include <cstdint>

#include "minidl/core/half.h"
#include "minidl/core/macros.h"

namespace minidl::optim {

MINIDL_HOST_DEVICE bool amp_is_finite(float value) {
#if defined(__CUDA_ARCH__)
  return isfinite(value);
#else
  return std::isfinite(value);
#endif
}

// Unscales grad[i]; true when the unscaled value is inf or NaN.
template <class T>
MINIDL_HOST_DEVICE bool amp_unscale_element(T* grad, int64_t i, float inv_scale) {
  const T unscaled = T(static_cast<float>(grad[i]) * inv_scale);
  grad[i] = unscaled;
  return !amp_is_finite(static_cast<float>(unscaled));
}

// GradScaler's settings as the update needs them. A plain struct: CUDA kernels take it by value.
struct ScaleUpdateParameters {
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  float min_scale = 1.0f;
  int32_t growth_interval = 2000;
};

MINIDL_HOST_DEVICE void amp_update_scale_state(float& scale, int32_t& growth_tracker,
                                               int32_t& consecutive_skips, bool found_inf,
                                               const ScaleUpdateParameters& parameters) {
  if (found_inf) {
    const float reduced = scale * parameters.backoff_factor;
    scale = reduced > parameters.min_scale ? reduced : parameters.min_scale;
    growth_tracker = 0;
    ++consecutive_skips;
    return;
  }
  consecutive_skips = 0;
  if (++growth_tracker >= parameters.growth_interval) {
    const float grown = scale * parameters.growth_factor;
    if (amp_is_finite(grown)) scale = grown;
    growth_tracker = 0;
  }
}

}  // namespace minidl::optim
