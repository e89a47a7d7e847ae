#pragma once
// The kernel interface of the embedding lookup and its backward (ops/embedding.cpp),
// implemented by ops/cpu/embedding.cpp and ops/cuda/embedding.cu; dispatched by kernels_for
// (Note [Kernel tables] in core/dispatch.h).
//
// Conventions: every tensor is contiguous and on one device; weight and grad_weight are
// [num_embeddings, embedding_dim]; indices (int64 or int32) are read flat, as [count], and
// out and grad as [count, embedding_dim]. Both kernels overwrite their output.
//
// Out-of-range indices: on the CPU the forward throws a minidl::Error naming the first one (the
// backward trusts the indices the forward checked). On CUDA the forward reports one through
// Note [Deferred device errors] (core/cuda/device_error.h) and writes zeros in its place; the
// backward, which may run before the host has seen the report, skips such indices. CUDA kernels
// run on the current stream and never synchronise the host.
#include <cstdint>
#include <string>

#include "minidl/core/tensor.h"

namespace minidl {

// Calls fn(Index{}) with the C++ type of embedding indices (int64 or int32), for both backends.
template <class Fn>
void visit_embedding_index(DType dtype, Fn&& fn) {
  if (dtype == kInt64) return fn(int64_t{});
  MINIDL_INTERNAL_ASSERT(dtype == kInt32, "embedding: indices of dtype ", dtype);
  fn(int32_t{});
}

// The row that receives no gradient in embedding_backward, when none does.
inline constexpr int64_t kNoPaddingRow = -1;

// "embedding: index 300 at position 7 is out of range for an embedding table of 256 rows": the
// one message of both backends (defined in ops/embedding.cpp).
std::string embedding_index_error(int64_t index, int64_t position, int64_t num_embeddings);

struct EmbeddingKernels {
  // out [count, embedding_dim] = weight[indices[j]] for each j.
  void (*embedding)(const Tensor& out, const Tensor& weight, const Tensor& indices);
  // grad_weight [num_embeddings, embedding_dim]: row r = the sum of grad[j] over the j with
  // indices[j] == r, added in ascending j from zero (float32 accumulation for the 16-bit
  // dtypes, rounded once); zero for rows no index names and for padding_row (or
  // kNoPaddingRow). Deterministic: the same bytes at any thread count and on every run.
  void (*embedding_backward)(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices,
                             int64_t padding_row);

  static const EmbeddingKernels kCpu;
  static const EmbeddingKernels kCuda;
};

}  // namespace minidl
