#pragma once
// Options of nn::Embedding and nn::functional::embedding (LibTorch's EmbeddingOptions and
// EmbeddingFuncOptions, with padding_idx only: max_norm, norm_type, scale_grad_by_freq and
// sparse are not there yet).
#include <cstdint>
#include <optional>

#include "minidl/core/arg.h"

namespace minidl::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  // Rows of the table (the vocabulary's size).
  MINIDL_ARG(int64_t, num_embeddings);
  // Elements of each row.
  MINIDL_ARG(int64_t, embedding_dim);
  // A row that receives no gradient and starts at zero (a padding token's); negative values
  // count from the end, as in PyTorch.
  MINIDL_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct EmbeddingFuncOptions {
  // A row that receives no gradient; in [-num_embeddings, num_embeddings).
  MINIDL_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

namespace functional {
// LibTorch names it torch::nn::functional::EmbeddingFuncOptions.
using minidl::nn::EmbeddingFuncOptions;
}  // namespace functional

}  // namespace minidl::nn
