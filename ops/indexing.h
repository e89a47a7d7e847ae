#pragma once
// Gathering and scattering along one dim by an index tensor, with LibTorch's names and
// semantics: torch::gather, scatter, scatter_add and index_add (index_select is in ops/shape.h,
// masked_select in ops/masking.h). The index is int64 (index_add also takes int32), on the
// input's device, with at most kMaxIndexingDims dims. An index outside [0, x.size(dim)) is an
// error naming the op, the index and the size (on CUDA raised at the next point the host waits
// for the device: Note [Deferred device errors] in core/cuda/device_error.h).
//
// Deterministic on both backends: where an index names one element several times,
// scatter_add and index_add add the contributions in ascending position in the index (the same
// bytes on every run, and on the CPU and CUDA alike: Note [Deterministic scatter_add] in
// ops/indexing.cpp), and scatter keeps the last one (PyTorch leaves that unspecified).
//   Tensor picked = gather(log_probs, 1, targets.unsqueeze(1));  // [batch, 1]
//   Tensor counts = scatter_add(zeros({classes}), 0, labels, ones({batch}));
//
// Gradients: gather's goes back by scatter_add; scatter_add's and index_add's src gradients are
// gather and index_select of the output gradient; scatter's x gradient is zero where src was
// written.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (likewise for the others): index's shape,
// x's dtype. index has x's number of dims and index.size(d) <= x.size(d) for d != dim.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// A copy of x with out[index[i][j][k]][j][k] = src[i][j][k] for dim 0 (likewise for the others).
// index, src and x have equal numbers of dims, index.size(d) <= src.size(d) for every d and
// index.size(d) <= x.size(d) for d != dim; src has x's dtype.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// As scatter, adding: out[index[i][j][k]][j][k] += src[i][j][k] (numeric dtypes).
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// A copy of x with source's slice i along `dim` times alpha added to the slice index[i]: index is
// 1-D [n], source has x's shape except n along `dim`.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 double alpha = 1);

// A copy of x with x[indices] = values (accumulate: +=), as torch::index_put: one index, a bool
// mask over x's leading dims or an int64 index of x's rows (negative counts from the end);
// values broadcast to x.index(indices)'s shape. Differentiable in x and values. A mask with
// values that carry the selected-count dim, and every int64 index, go through scatter
// (accumulate: index_add), so repeated indices keep the last value or add in position order;
// a mask whose values broadcast over the rows is a `where`, with no wait for the device.
// x.index({mask}) and x.index_put_ (core/tensor.h) are the method forms.
Tensor index_put(const Tensor& x, const std::vector<indexing::TensorIndex>& indices,
                 const Tensor& values, bool accumulate = false);

}  // namespace minidl
