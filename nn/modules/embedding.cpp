#include "minidl/nn/modules/embedding.h"

#include <ostream>

#include "minidl/nn/functional.h"
#include "minidl/nn/init.h"

namespace minidl::nn {

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options)
    : Module("Embedding"), options(options) {
  const int64_t rows = options.num_embeddings();
  MINIDL_CHECK(rows > 0 && options.embedding_dim() > 0,
               "Embedding: expected positive num_embeddings and embedding_dim, got ", rows, " and ",
               options.embedding_dim());
  if (const std::optional<int64_t> padding_idx = options.padding_idx()) {
    MINIDL_CHECK(*padding_idx >= -rows && *padding_idx < rows,
                 "Embedding: expected padding_idx in [", -rows, ", ", rows, ") for num_embeddings ",
                 rows, ", got ", *padding_idx);
    // Kept as a row, as LibTorch's module does, so that printing shows the row.
    if (*padding_idx < 0) this->options.padding_idx(*padding_idx + rows);
  }
  weight = register_parameter("weight", empty({rows, options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (const std::optional<int64_t> padding_idx = options.padding_idx())
    init::zeros_(weight.narrow(0, *padding_idx, 1));
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, weight,
                               EmbeddingFuncOptions().padding_idx(options.padding_idx()));
}

void EmbeddingImpl::pretty_print(std::ostream& out) const {
  out << "Embedding(num_embeddings=" << options.num_embeddings()
      << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) out << ", padding_idx=" << *options.padding_idx();
  out << ")";
}

}  // namespace minidl::nn
