#pragma once
// Masking: masked_fill (and Tensor::masked_fill_), masked_select, and the triangles tril and
// triu, as their torch namesakes. masked_fill, tril and triu are element-wise selects
// (ops/elementwise.h's where), differentiable like it: the gradient flows to the elements that
// are kept.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// x with `value` wherever the bool `mask` is true; mask and x broadcast together (the result has
// their broadcast shape, as torch.masked_fill). nanoGPT's causal mask:
//   scores.masked_fill(causal == 0, -INFINITY)  // causal = tril(ones({T, T}))
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// The elements of x where the bool `mask` is true, as a 1-D tensor in row-major order; x and
// mask broadcast together, as torch.masked_select. The gradient goes back to the selected
// elements (a masked scatter), zero elsewhere. The result's length is the mask's count, which
// the host must know to allocate it: on CUDA this op waits for the device once (one copy of
// the count to the host), so keep it out of a step that should not synchronise.
Tensor masked_select(const Tensor& x, const Tensor& mask);

// The lower (upper) triangle of the last two dimensions of x, the rest zero: element [i, j] is
// kept when j - i <= diagonal (tril) or j - i >= diagonal (triu); diagonal 0 is the main one.
// The [rows, cols] mask is made on the host and copied to x's device, so on CUDA make a
// triangle once (a model's buffer) rather than at every step.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

}  // namespace minidl
