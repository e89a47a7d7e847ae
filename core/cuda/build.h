#pragma once
// Whether this build of minidl has CUDA. Dispatch code writes
//   if constexpr (cuda::kBuilt) cuda::some_kernel(...);
// so a CPU-only build compiles and links without the CUDA launchers (a function named only in
// a discarded `if constexpr` branch needs no definition).
#ifndef MINIDL_WITH_CUDA
#define MINIDL_WITH_CUDA 0
#endif

namespace minidl::cuda {
inline constexpr bool kBuilt = MINIDL_WITH_CUDA != 0;
}
