#pragma once
// Note [Kernel tables]: how an operation reaches its backend.
//
// Each family of kernels declares its interface once, as a struct of function pointers in a
// <family>_kernels.h beside the operation that calls it (ops/pool_kernels.h,
// data/loader/gather_rows_kernels.h, optim/amp_kernels.h, ...), with the conventions both
// backends follow. The struct names its two implementations as static members: Kernels::kCpu,
// defined at the end of the family's CPU kernel file (ops/cpu/<family>.cpp, data/cpu/,
// optim/cpu/), and Kernels::kCuda, at the end of its CUDA kernel file (ops/cuda/<family>.cu,
// data/cuda/, optim/cuda/, or the .cpp that wraps cuBLAS or cuDNN). The operation checks its
// arguments, allocates the result and calls
//   kernels_for<PoolKernels>(input.device()).max_pool2d(out, indices, input, window);
//
// Adding a kernel: a member in the family's struct and a kernel on each backend. Adding a
// family: a new <family>_kernels.h and its two tables. Adding a backend: a static member in each
// struct, its definitions, and a branch here. What one backend alone has (a host mirror, a
// launch shaped unlike the other backend's loop) stays out of the tables and is called directly.
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
