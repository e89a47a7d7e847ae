// CPU embedding: the row gather and its deterministic scatter-add backward (Note [Deterministic
// embedding backward] in ops/embedding.cpp). Conventions in ops/embedding_kernels.h.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/embedding_kernels.h"

namespace minidl::cpu {

namespace {

// Calls fn(Index{}) with the C++ type of the indices (int64 or int32).
template <class Fn>
void visit_index_type(DType dtype, Fn&& fn) {
  if (dtype == kInt64) return fn(int64_t{});
  MINIDL_INTERNAL_ASSERT(dtype == kInt32, "embedding: indices of dtype ", dtype);
  fn(int32_t{});
}

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
  visit_index_type(indices.dtype(), [&](auto index_zero) {
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

// Adds grad's rows into accumulator [num_embeddings, dim] (zeroed by the caller) at their
// indices, skipping padding_row. The threads own disjoint ranges of table rows and each scans
// every index in order, so each row is summed in position order at any thread count.
template <class Accumulate, class T, class Index>
void scatter_add_rows(Accumulate* accumulator, const T* grad, const Index* indices, int64_t count,
                      int64_t num_embeddings, int64_t dim, int64_t padding_row) {
  // A task's work: its rows' share of the additions plus the scan of every index.
  const int64_t additions_per_row =
      std::max<int64_t>(1, count / std::max<int64_t>(1, num_embeddings));
  const int64_t rows_per_grain =
      std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(1, additions_per_row * dim));
  parallel_for(0, num_embeddings, rows_per_grain, [&](int64_t first_row, int64_t last_row) {
    for (int64_t j = 0; j < count; ++j) {
      const int64_t row = indices[j];
      if (row < first_row || row >= last_row || row == padding_row) continue;
      Accumulate* to = accumulator + row * dim;
      const T* from = grad + j * dim;
      for (int64_t c = 0; c < dim; ++c) to[c] += static_cast<Accumulate>(from[c]);
    }
  });
}

void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices,
                               int64_t padding_row) {
  const int64_t num_embeddings = grad_weight.size(0), dim = grad_weight.size(1);
  const int64_t count = indices.numel();
  visit_floating(grad_weight.dtype(), "embedding backward", [&](auto zero) {
    using T = decltype(zero);
    visit_index_type(indices.dtype(), [&](auto index_zero) {
      using Index = decltype(index_zero);
      const Index* index = static_cast<const Index*>(indices.data_ptr());
      const T* from = static_cast<const T*>(grad.data_ptr());
      T* result = static_cast<T*>(grad_weight.data_ptr());
      const size_t elements = static_cast<size_t>(num_embeddings * dim);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        std::fill(result, result + elements, T(0));
        scatter_add_rows<T>(result, from, index, count, num_embeddings, dim, padding_row);
      } else {
        // 16-bit: sum in float32 and round once, as the CUDA kernel does.
        std::vector<float> accumulator(elements, 0.0f);
        scatter_add_rows<float>(accumulator.data(), from, index, count, num_embeddings, dim,
                                padding_row);
        for (size_t e = 0; e < elements; ++e) result[e] = T(accumulator[e]);
      }
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
