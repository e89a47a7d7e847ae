#pragma once
// The kernel interface of the scans (ops/scan.cpp), implemented by ops/cpu/scan.cpp and
// ops/cuda/scan.cu; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// Conventions: every tensor is contiguous, on one device, and viewed as [outer, size, inner]
// around the scanned dim; a line is one (outer, inner) pair, `size` elements `inner` apart.
// Dtypes: float32, float64 (CPU only), float16, bfloat16 and int64. Each line is scanned
// serially by one thread with the per-line functions of ops/scan_math.h, in the same order on
// both backends, so the CPU and CUDA results are equal to the bit. Every kernel overwrites its
// output. CUDA kernels run on the current stream and never synchronise the host.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

struct ScanKernels {
  // out [outer, size, inner] = the running sum of input along size: ascending, or from the end
  // when `reverse` (out[k] = input[k] + ... + input[size - 1], cumsum's backward).
  void (*cumsum)(const Tensor& out, const Tensor& input, int64_t outer, int64_t size, int64_t inner,
                 bool reverse);
  // out = the running product of input along size, ascending.
  void (*cumprod)(const Tensor& out, const Tensor& input, int64_t outer, int64_t size,
                  int64_t inner);
  // grad_input = the gradient of cumprod(input) for the output gradient `grad` (floating
  // dtypes only), exact with zeros in the input (Note [Cumprod gradient with zeros]).
  void (*cumprod_backward)(const Tensor& grad_input, const Tensor& grad, const Tensor& input,
                           int64_t outer, int64_t size, int64_t inner);

  static const ScanKernels kCpu;
  static const ScanKernels kCuda;
};

}  // namespace minidl
