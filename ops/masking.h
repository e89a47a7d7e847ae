#pragma once
// Masking: masked_fill, and the triangles tril and triu, as their torch namesakes. All three
// are element-wise selects (ops/elementwise.h's where), differentiable like it: the gradient
// flows to the elements that are kept.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// x with `value` wherever the bool `mask` is true; mask and x broadcast together (the result has
// their broadcast shape, as torch.masked_fill). nanoGPT's causal mask:
//   scores.masked_fill(causal == 0, -INFINITY)  // causal = tril(ones({T, T}))
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// The lower (upper) triangle of the last two dimensions of x, the rest zero: element [i, j] is
// kept when j - i <= diagonal (tril) or j - i >= diagonal (triu); diagonal 0 is the main one.
// The [rows, cols] mask is made on the host and copied to x's device, so on CUDA make a
// triangle once (a model's buffer) rather than at every step.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

}  // namespace minidl
