// nn::Embedding and F::embedding: the forward against the op, the initialisation (N(0, 1) and
// a zero padding row), padding_idx from the end, the gradient, printing and option errors.
#include "minidl/ops/embedding.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::bitwise_equal;

std::string printed(const nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

TEST(EmbeddingModule, ForwardIsTheFunctionalEmbedding) {
  nn::Embedding embedding(10, 3);
  EXPECT_EQ(embedding->weight.sizes(), (Shape{10, 3}));
  EXPECT_EQ(embedding->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  Tensor indices = tensor(std::vector<int64_t>{9, 0, 9, 4}, {2, 2});
  Tensor out = embedding(indices);
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 3}));
  EXPECT_TRUE(bitwise_equal(out, F::embedding(indices, embedding->weight)));
  EXPECT_TRUE(bitwise_equal(out, minidl::embedding(embedding->weight, indices)));
  EXPECT_TRUE(bitwise_equal(embedding(indices.to(kInt32)), out));
}

TEST(EmbeddingModule, DefaultInitIsStandardNormal) {
  manual_seed(7);
  nn::Embedding embedding(1000, 100);  // 100000 draws
  const double mean_value = mean(embedding->weight).item<double>();
  const double mean_square = mean(embedding->weight * embedding->weight).item<double>();
  EXPECT_LT(std::abs(mean_value), 0.02);
  EXPECT_NEAR(std::sqrt(mean_square - mean_value * mean_value), 1.0, 0.02);
}

TEST(EmbeddingModule, PaddingRowStartsAtZeroAndGetsNoGradient) {
  nn::Embedding embedding(nn::EmbeddingOptions(5, 2).padding_idx(-2));  // row 3
  EXPECT_EQ(embedding->options.padding_idx(), std::optional<int64_t>(3));
  EXPECT_EQ(to_vector<float>(embedding->weight.narrow(0, 3, 1)), (std::vector<float>{0, 0}));
  embedding->reset_parameters();
  EXPECT_EQ(to_vector<float>(embedding->weight.narrow(0, 3, 1)), (std::vector<float>{0, 0}));
  Tensor out = embedding(tensor(std::vector<int64_t>{3, 1, 3}));
  out.sum().backward();
  EXPECT_EQ(to_vector<float>(embedding->weight.grad()),
            (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 0, 0, 0}));
  // The functional form takes padding_idx the same way.
  Tensor weight = ones({5, 2}).requires_grad_();
  F::embedding(tensor(std::vector<int64_t>{4, 4, 0}), weight,
               F::EmbeddingFuncOptions().padding_idx(-1))
      .sum()
      .backward();
  EXPECT_EQ(to_vector<float>(weight.grad()), (std::vector<float>{1, 1, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(EmbeddingModule, PrintsAsLibTorch) {
  EXPECT_EQ(printed(*nn::Embedding(10, 3)), "Embedding(num_embeddings=10, embedding_dim=3)");
  EXPECT_EQ(printed(*nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(0))),
            "Embedding(num_embeddings=10, embedding_dim=3, padding_idx=0)");
}

TEST(EmbeddingModule, ChecksItsOptions) {
  EXPECT_ERROR_CONTAINS(nn::Embedding(0, 3),
                        "Embedding: expected positive num_embeddings and embedding_dim, got 0 "
                        "and 3");
  EXPECT_ERROR_CONTAINS(nn::Embedding(nn::EmbeddingOptions(4, 3).padding_idx(4)),
                        "Embedding: expected padding_idx in [-4, 4) for num_embeddings 4, got 4");
  EXPECT_ERROR_CONTAINS(nn::Embedding(nn::EmbeddingOptions(4, 3).padding_idx(-5)), "got -5");
  nn::Embedding embedding(4, 3);
  EXPECT_ERROR_CONTAINS(embedding(tensor(std::vector<int64_t>{4})),
                        "embedding: index 4 at position 0 is out of range for an embedding table "
                        "of 4 rows");
}

}  // namespace
}  // namespace minidl
