#pragma once
// Embedding lookup, as torch::embedding (ATen's at::embedding; the functional form with
// PyTorch's argument order, F::embedding(input, weight, options), is in nn/functional.h).
#include <cstdint>
#include <optional>

#include "minidl/core/tensor.h"

namespace minidl {

// weight [num_embeddings, embedding_dim] (any floating dtype), indices int64 or int32 of any
// shape -> indices.shape + [embedding_dim], the rows of weight at the indices, in weight's
// dtype. An index outside [0, num_embeddings) is an error (on CUDA, raised at the next point
// the host waits for the device: Note [Deferred device errors] in core/cuda/device_error.h).
//
// The gradient flows to weight only: each row receives the sum of the output gradients at its
// indices, added in the order of their positions in `indices` (Note [Deterministic embedding
// backward] in ops/embedding.cpp), except the row padding_idx, which receives none. As in
// PyTorch, padding_idx lies in [-num_embeddings, num_embeddings) and a negative value counts
// from the end; it does not change the forward. ATen spells "no padding row" as -1; here it is
// std::nullopt, so that -1 can name the last row as F.embedding's does.
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace minidl
