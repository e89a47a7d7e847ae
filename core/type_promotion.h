#pragma once
// PyTorch's type promotion: the dtype a binary op computes in when its operands' dtypes differ
// (torch.promote_types, torch.result_type).
//
// - promote_types(a, b): bool with anything gives the other; an integer with a floating dtype
//   gives the floating one; two integers or two floating dtypes give the wider; float16 with
//   bfloat16 gives float32; uint8 with a signed integer gives the signed one.
// - result_type: operands rank by kind. A tensor with dimensions outranks a 0-dimensional
//   tensor, which outranks a scalar: a lower-ranked operand changes the dtype only when its
//   category (bool < integer < floating) is higher. So float16 + 2.5 stays float16, an int32
//   tensor with a 0-dimensional int64 tensor stays int32, and an int64 tensor with 0.5 gives
//   float32 (PyTorch's default floating dtype).
//
// A scalar's category comes from the C++ type it was written as (core/scalar.h), as in PyTorch:
// an int64 tensor + 2.0 is float32, + 2 stays int64, a bool tensor + 1 is int64.
#include "minidl/core/dtype.h"
#include "minidl/core/scalar.h"

namespace minidl {

class Tensor;

DType promote_types(DType a, DType b);
// The dtype a scalar brings to promotion: bool, int64, or float32 (PyTorch's default floating
// dtype) for a floating-point scalar.
DType scalar_type(const Scalar& scalar);
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& tensor, const Scalar& scalar);
// Whether a result of dtype `from` may be written into a tensor of dtype `to` (in-place ops):
// not to a lower category (floating to integer, anything but bool to bool), as torch.can_cast.
bool can_cast(DType from, DType to);

}  // namespace minidl
