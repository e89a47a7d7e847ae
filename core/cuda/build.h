#pragma once
// Whether this build of minidl has CUDA. kernels_for (core/dispatch.h) and the few
// backend-specific calls left (copies between host and device, GradScaler's update, the
// optimizers' multi-tensor step, clip_grad_norm_'s, the tensor-core attention's tables) write
//   if constexpr (cuda::kBuilt) ...
// so a CPU-only build compiles and links without the CUDA launchers (a function named only in
// a discarded `if constexpr` branch needs no definition). The library's CMake target defines
// MINIDL_WITH_CUDA publicly, so that every program agrees with the library on it (inline code
// that disagreed would break the one-definition rule).
#ifndef MINIDL_WITH_CUDA
#define MINIDL_WITH_CUDA 0
#endif

namespace minidl::cuda {
inline constexpr bool kBuilt = MINIDL_WITH_CUDA != 0;
}
