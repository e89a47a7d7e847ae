#pragma once
// Note [Kernel tables]: how an op reaches its backend.
//
// Each op family declares its kernel interface once, as a struct of function pointers in
// ops/<family>_kernels.h (PoolKernels, LossKernels, ...), with the conventions both backends
// follow. The struct names its two implementations as static members: Kernels::kCpu, defined
// in ops/cpu/<family>.cpp, and Kernels::kCuda, defined in ops/cuda/<family>.cu (or the .cpp
// that wraps cuBLAS or cuDNN). An op's .cpp checks its arguments, allocates the result and
// calls
//   kernels_for<PoolKernels>(input.device()).max_pool2d(out, indices, input, window);
//
// Adding an op: a member in the family's struct and a kernel on each backend. Adding a family:
// a new ops/<family>_kernels.h and its two tables. Adding a backend: a static member in each
// struct, its definitions, and a branch here.
//
// The tables are plain constants, initialised at compile time, and referenced by name from
// kernels_for, so nothing registers itself at start-up (minidl is a static library: an object
// file that only registered itself would be dropped by the linker). In a CPU-only build the
// .cu files are not compiled and the cuBLAS/cuDNN wrappers compile to nothing, so Kernels::kCuda
// is declared but never defined; kernels_for names it only in a discarded `if constexpr`
// branch, which needs no definition.
#include "minidl/core/cuda/build.h"
#include "minidl/core/device.h"
#include "minidl/core/error.h"

namespace minidl {

// The kernel table of family `Kernels` for tensors on `device`.
template <class Kernels>
const Kernels& kernels_for(Device device) {
  if constexpr (cuda::kBuilt) {
    if (device.is_cuda()) return Kernels::kCuda;
  }
  MINIDL_INTERNAL_ASSERT(device.is_cpu(), "a CUDA tensor exists in a build without CUDA");
  return Kernels::kCpu;
}

}  // namespace minidl
