#pragma once
// The CPU loop of gather_rows (data/loader/gather_rows.h): contiguous tensors, rows already
// checked.
#include "minidl/core/tensor.h"

namespace minidl::cpu {

void gather_rows_kernel(const Tensor& out, const Tensor& source, const Tensor& rows);

}  // namespace minidl::cpu
