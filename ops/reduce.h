#pragma once
// Reductions over all elements or over the given dims (negative dims allowed), with keepdim.
// Floating-point inputs accumulate in float32 (float64 for float64); sum of integer or bool
// tensors gives int64, as PyTorch.
#include <concepts>
#include <tuple>

#include "minidl/core/tensor.h"

namespace minidl {

Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim = false);
// sum(x, -1), mean(x, -1): one dim (templates, so that a braced list is still a list of dims:
// sum(x, {}) reduces every dim, as torch.sum(x, ())).
template <std::integral Dim>
Tensor sum(const Tensor& x, Dim dim, bool keepdim = false) {
  return sum(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
template <std::integral Dim>
Tensor mean(const Tensor& x, Dim dim, bool keepdim = false) {
  return mean(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
// The largest (smallest) element; the gradient flows to the first one of equal extremes.
// (PyTorch's max(x) shares it evenly among ties; on distinct values the two agree.)
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Along one dim, as torch::max(x, dim): (values, indices), indices int64 along `dim` to the
// first extreme element (NaN counts as the extreme). Only values are differentiable; their
// gradient goes to the element each index selects, as PyTorch's max.dim backward.
//   auto [values, indices] = max(logits, 1);
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
// int64 index of the first maximum (over the flattened tensor when no dim is given).
Tensor argmax(const Tensor& x);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
// Variance with Bessel's correction (correction = 1) by default, as torch.var. Over all
// elements, or over `dims` (empty: all): var(x, {1}) reduces dim 1, and var(x, {}, 0) is the
// biased variance of all elements.
Tensor var(const Tensor& x);
Tensor var(const Tensor& x, const Shape& dims, int64_t correction = 1, bool keepdim = false);

// Derived from the reductions above and element-wise ops (ops/reduce_derived.cpp), over `dims`
// (an empty list: every dim), with keepdim:
// - amax, amin: the largest (smallest) value, as torch.amax; the gradient goes to the first
//   extreme element of each reduced run (PyTorch shares it evenly among ties).
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
// - logsumexp: log(sum(exp(x))), computed stably (shifted by the maximum), as torch.logsumexp.
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false);
// - std: the square root of var, with its correction.
Tensor std(const Tensor& x);
Tensor std(const Tensor& x, const Shape& dims, int64_t correction = 1, bool keepdim = false);
// - any, all: bool, whether any (every) element is non-zero (NaN counts as non-zero); any dtype.
Tensor any(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, const Shape& dims = {}, bool keepdim = false);

// The vector p-norm over `dims` (an empty list: every dim), as torch.linalg.vector_norm under
// LibTorch's name torch::norm (x.norm(p, dims, keepdim)), in ops/vector_norm.cpp: p = 2 (the
// default), 1, INFINITY (max |x|), -INFINITY (min |x|), 0 (the count of non-zeros) or any other
// positive p, (sum |x|^p)^(1/p). Floating dtypes; 16-bit inputs are computed in float32. The
// gradient is PyTorch's: 0 where the norm is 0 (p = 2 at x = 0 included), shared evenly among
// ties for the infinity norms, 0 for p = 0.
Tensor norm(const Tensor& x, double p = 2, const Shape& dims = {}, bool keepdim = false);

}  // namespace minidl
