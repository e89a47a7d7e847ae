#pragma once
// Scans and products along one dim, with LibTorch's names and semantics: torch::cumsum,
// torch::cumprod and torch::prod. Floating-point inputs keep their dtype and accumulate in
// float32 (float64 for float64), in order along the dim; integer and bool inputs give int64, as
// PyTorch. Negative dims count from the end; a 0-d tensor is scanned as one element.
//   Tensor positions = cumsum(mask.to(kInt64), 1) - 1;  // the rank of each true element
//
// Differentiable (floating dtypes): cumsum's gradient is the reversed cumulative sum of the
// output gradient; cumprod's and prod's are exact where the input holds zeros (Note [Cumprod
// gradient with zeros] in ops/scan_math.h), as PyTorch's are.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// out[..., k, ...] = x[..., 0, ...] + ... + x[..., k, ...] along `dim`; x's shape.
Tensor cumsum(const Tensor& x, int64_t dim);
// out[..., k, ...] = x[..., 0, ...] * ... * x[..., k, ...] along `dim`; x's shape.
Tensor cumprod(const Tensor& x, int64_t dim);
// The product of every element (a 0-d tensor; 1 for an empty x), and along `dim`, with keepdim.
// prod is the last element of cumprod (ops/scan.cpp), so it shares cumprod's gradient.
Tensor prod(const Tensor& x);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace minidl
