#pragma once
// Sorting along one dim, with PyTorch's names and semantics (torch.sort, torch.argsort,
// torch.topk). Every dtype; NaN counts as the largest value; equal values keep their input
// order in both directions (Note [Sort order] in ops/sort_math.h), so `stable` changes nothing:
// the result is always the stable one, on the CPU and CUDA alike. Indices are int64 along
// `dim`. The values are differentiable: their gradient goes back to the positions the indices
// name, as PyTorch's sort and topk backward.
//   auto [values, indices] = sort(x, /*dim=*/-1, /*descending=*/true);
//   auto [top_logits, top_tokens] = topk(logits, 50);  // [batch, 50], largest first
#include <cstdint>
#include <tuple>

#include "minidl/core/tensor.h"

namespace minidl {

// (values, indices) of x sorted along `dim`; both of x's shape.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = false);
// The indices of sort(x, dim, descending, stable).
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (smallest) elements along `dim` and their indices: x's shape with size k along
// `dim`, 0 <= k <= x.size(dim). `sorted` = false is accepted and still returns them in order.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);

}  // namespace minidl
