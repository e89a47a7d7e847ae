#pragma once
// The kernel interface of copies and fills within one device (Tensor::copy_, to, clone, fill_;
// ops/copy.cpp), implemented by ops/cpu/copy.cpp and ops/cuda/copy.cu; dispatched by
// kernels_for (Note [Kernel tables] in core/dispatch.h). Copies between the host and a device,
// or between devices, are CUDA's alone (ops/cuda/transfer.h).
//
// Both kernels walk dst in its memory order, merging what is contiguous (Note [Element-wise
// geometry] in ops/iteration_shape.h), so stores are unit-stride into any layout. CUDA kernels
// run on the current stream of dst's device.
#include "minidl/core/tensor.h"

namespace minidl {

struct CopyKernels {
  // dst[i] = convert(src[i]) for every element; src is on dst's device and has dst's shape
  // (possibly a broadcast view), any dtype.
  void (*copy)(const Tensor& dst, const Tensor& src);
  // dst[i] = value, converted to dst's dtype.
  void (*fill)(const Tensor& dst, double value);

  static const CopyKernels kCpu;
  static const CopyKernels kCuda;
};

}  // namespace minidl
