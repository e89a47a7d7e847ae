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
// minidl's scalars are doubles, so a scalar's category comes from its value: integral values
// (2.0) count as integers, and a fraction, inf or NaN as floating. PyTorch decides by the
// literal's type instead (an int64 tensor + 2.0 is float32 there, + 2 is int64); see
// docs/guide/tensors-and-autograd.md.
#include "minidl/core/dtype.h"

namespace minidl {

class Tensor;

DType promote_types(DType a, DType b);
// The dtype a scalar brings to promotion: int64 for an integral value, else float32.
DType scalar_type(double value);
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& tensor, double scalar);
// Whether a result of dtype `from` may be written into a tensor of dtype `to` (in-place ops):
// not to a lower category (floating to integer, anything but bool to bool), as torch.can_cast.
bool can_cast(DType from, DType to);

}  // namespace minidl
