#pragma once
// nn::Embedding: a lookup table of num_embeddings vectors of embedding_dim elements, as
// torch::nn::Embedding. weight [num_embeddings, embedding_dim], initialised as PyTorch:
// normal_(0, 1), and the padding_idx row (if any) zeroed.
#include <cstdint>
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/embedding.h"

namespace minidl::nn {

class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);

  // indices (int64 or int32) of any shape -> indices.shape + [embedding_dim]
  Tensor forward(const Tensor& indices);
  // Draws the weight again, as at construction.
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  EmbeddingOptions options;
  Tensor weight;  // [num_embeddings, embedding_dim]
};

MINIDL_MODULE(Embedding);

}  // namespace minidl::nn
