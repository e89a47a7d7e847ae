#pragma once
// The kernel interface of gather_rows (data/loader/gather_rows.h), implemented by
// data/cpu/gather_rows.cpp (a memcpy per row) and data/cuda/gather_rows.cu (a grid-stride copy
// by words); dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h). Conventions:
// - out [B, ...] (overwritten) and source [N, ...] are contiguous, of one dtype, with the same
//   trailing sizes; rows is int64 [B]. All are on one device.
// - Rows are already checked to lie in [0, N) (the caller does it on the host).
// - CUDA kernels run on the current stream of the tensors' device and never wait for it.
#include "minidl/core/tensor.h"

namespace minidl::data {

struct GatherRowsKernels {
  void (*gather_rows)(const Tensor& out, const Tensor& source, const Tensor& rows);

  static const GatherRowsKernels kCpu;
  static const GatherRowsKernels kCuda;
};

}  // namespace minidl::data
