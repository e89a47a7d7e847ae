// CPU embedding: the row gather and its deterministic backward, a counting sort of the positions
// by row and an in-order sum of each row's (Note [Deterministic embedding backward] in
// ops/embedding.cpp). Conventions in ops/embedding_kernels.h.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/embedding_kernels.h"

namespace minidl::cpu {

namespace {

template <class Index>
void check_indices(const Index* indices, int64_t count, int64_t num_embeddings) {
  for (int64_t j = 0; j < count; ++j)
    MINIDL_CHECK(indices[j] >= 0 && indices[j] < num_embeddings,
                 embedding_index_error(indices[j], j, num_embeddings));
}

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t num_embeddings = weight.size(0), count = indices.numel();
  // Rows move as bytes, whatever the dtype.
  const size_t row_bytes = static_cast<size_t>(weight.size(1)) * weight.element_size();
  const char* table = static_cast<const char*>(weight.data_ptr());
  char* destination = static_cast<char*>(out.data_ptr());
  visit_embedding_index(indices.dtype(), [&](auto index_zero) {
    using Index = decltype(index_zero);
    const Index* index = static_cast<const Index*>(indices.data_ptr());
    check_indices(index, count, num_embeddings);
    const int64_t rows_per_grain =
        std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(1, weight.size(1)));
    parallel_for(0, count, rows_per_grain, [&](int64_t first, int64_t last) {
      for (int64_t j = first; j < last; ++j)
        std::memcpy(destination + j * row_bytes, table + static_cast<int64_t>(index[j]) * row_bytes,
                    row_bytes);
    });
  });
}

// The positions of each table row's indices, ascending: a counting sort by row. Row r's
// positions are positions[starts[r], starts[r + 1]); padding_row gets none.
struct PositionsByRow {
  std::vector<int64_t> starts;     // [num_embeddings + 1]
  std::vector<int64_t> positions;  // [count of indices other than padding_row]
};

template <class Index>
PositionsByRow positions_by_row(const Index* indices, int64_t count, int64_t num_embeddings,
                                int64_t padding_row) {
  PositionsByRow sorted;
  sorted.starts.assign(static_cast<size_t>(num_embeddings + 1), 0);
  for (int64_t j = 0; j < count; ++j)
    if (indices[j] != padding_row) ++sorted.starts[static_cast<size_t>(indices[j]) + 1];
  for (size_t r = 1; r < sorted.starts.size(); ++r) sorted.starts[r] += sorted.starts[r - 1];
  sorted.positions.resize(static_cast<size_t>(sorted.starts.back()));
  std::vector<int64_t> next(sorted.starts.begin(), sorted.starts.end() - 1);
  for (int64_t j = 0; j < count; ++j)
    if (indices[j] != padding_row) sorted.positions[next[static_cast<size_t>(indices[j])]++] = j;
  return sorted;
}

// grad_weight [num_embeddings, dim]: each row the sum, from zero, of grad's rows at its
// positions in ascending order, in Accumulate (float32 for the 16-bit dtypes, rounded once).
// The threads split the table's rows, so each row is summed by one thread in that order at any
// thread count (Note [Deterministic embedding backward] in ops/embedding.cpp).
template <class Accumulate, class T>
void sum_rows_in_position_order(T* grad_weight, const T* grad, const PositionsByRow& sorted,
                                int64_t num_embeddings, int64_t dim) {
  const int64_t terms_per_row = std::max<int64_t>(
      1, static_cast<int64_t>(sorted.positions.size()) / std::max<int64_t>(1, num_embeddings));
  const int64_t rows_per_grain =
      std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(1, terms_per_row * dim));
  parallel_for(0, num_embeddings, rows_per_grain, [&](int64_t first_row, int64_t last_row) {
    std::vector<Accumulate> sum(static_cast<size_t>(dim));
    for (int64_t row = first_row; row < last_row; ++row) {
      std::fill(sum.begin(), sum.end(), Accumulate(0));
      for (int64_t k = sorted.starts[static_cast<size_t>(row)];
           k < sorted.starts[static_cast<size_t>(row) + 1]; ++k) {
        const T* from = grad + sorted.positions[static_cast<size_t>(k)] * dim;
        for (int64_t c = 0; c < dim; ++c) sum[c] += static_cast<Accumulate>(from[c]);
      }
      T* to = grad_weight + row * dim;
      for (int64_t c = 0; c < dim; ++c) to[c] = T(sum[c]);
    }
  });
}

void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices,
                               int64_t padding_row) {
  const int64_t num_embeddings = grad_weight.size(0), dim = grad_weight.size(1);
  const int64_t count = indices.numel();
  visit_embedding_index(indices.dtype(), [&](auto index_zero) {
    using Index = decltype(index_zero);
    const PositionsByRow sorted = positions_by_row(static_cast<const Index*>(indices.data_ptr()),
                                                   count, num_embeddings, padding_row);
    visit_floating(grad_weight.dtype(), "embedding backward", [&](auto zero) {
      using T = decltype(zero);
      using Accumulate = std::conditional_t<std::is_same_v<T, double>, double, float>;
      sum_rows_in_position_order<Accumulate>(static_cast<T*>(grad_weight.data_ptr()),
                                             static_cast<const T*>(grad.data_ptr()), sorted,
                                             num_embeddings, dim);
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const EmbeddingKernels EmbeddingKernels::kCpu{
    .embedding = cpu::embedding_kernel,
    .embedding_backward = cpu::embedding_backward_kernel,
};

}  // namespace minidl
