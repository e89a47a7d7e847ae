#pragma once
// Integer division rounding up: block counts of the CPU kernels, grid sizes of the CUDA
// launchers, output ranges of convolution. One definition, so a fix lands in every caller.
#include <cstdint>

#include "minidl/core/macros.h"

namespace minidl {

// ceil(a / b) for a >= 0 and b > 0. Written without a + b - 1, which overflows for a near
// INT64_MAX.
MINIDL_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace minidl
