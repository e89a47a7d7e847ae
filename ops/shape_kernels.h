#pragma once
// The kernel interface of gathering and encoding (index_select and its backward, one_hot;
// ops/shape.cpp), implemented by ops/cpu/shape.cpp and ops/cuda/shape.cu; dispatched by
// kernels_for (Note [Kernel tables] in core/dispatch.h). All tensors are contiguous and on one
// device; x is viewed as [outer, x.size(dim), inner] around `dim`.
//
// Indices and labels are checked by the kernels. On the CPU an out-of-range value is a
// minidl::Error naming the first one. On CUDA they live on the device, so checking them on the
// host would synchronise: an out-of-range value is reported through Note [Deferred device
// errors] (core/cuda/device_error.h) and raised as a minidl::Error at the next point where the
// host waits for the device, the CUDA context still usable. CUDA kernels run on the current
// stream and never synchronise the host.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

struct ShapeKernels {
  // out [outer, index.numel(), inner] = x [outer, size, inner] at rows index[j] along dim.
  void (*index_select)(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
  // grad_x [outer, size, inner] += grad [outer, index.numel(), inner] scattered to rows
  // index[j]; repeated indices add up (on CUDA with atomicAdd, in no fixed order). The indices
  // were checked by the forward (on CUDA, which reported them, an out-of-range one is skipped).
  void (*index_add)(const Tensor& grad_x, const Tensor& grad, int64_t dim, const Tensor& index);
  // out [labels.numel(), num_classes] (int64) = 1 at each label, 0 elsewhere; every element is
  // written, so out needs no zero fill.
  void (*one_hot)(const Tensor& out, const Tensor& labels, int64_t num_classes);

  static const ShapeKernels kCpu;
  static const ShapeKernels kCuda;
};

}  // namespace minidl
