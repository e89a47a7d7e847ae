#pragma once
// The CUDA launcher of gather_rows (data/loader/gather_rows.h), defined in gather_rows.cu:
// contiguous tensors on one device, rows already checked; runs on the device's current stream.
#include "minidl/core/tensor.h"

namespace minidl::cuda {

void gather_rows_kernel(const Tensor& out, const Tensor& source, const Tensor& rows);

}  // namespace minidl::cuda
