// The embedding lookup: a gather of weight's rows at the indices, and its backward, a
// scatter-add into a gradient of weight's shape.
//
// Note [Deterministic embedding backward]
// A row of the weight gradient is the sum of the output gradients at every position where its
// index occurs; a common index (a padding token, "the") occurs thousands of times in a batch.
// Adding with atomics would make the sum's rounding depend on the order threads happen to
// run, so the bytes of the gradient would change from run to run. Both backends instead add
// each row's terms in one fixed order, ascending position in `indices`, starting from zero:
//
// Both backends first group the positions by index, keeping each index's positions ascending,
// and then sum each row's terms in that order, the threads splitting the table's rows (not the
// indices), so each row is summed by one thread whatever the thread count:
//
//   - CPU (ops/cpu/embedding.cpp): a counting sort of the positions by row (one serial pass
//     over the indices, memory for a count per row and a position per index), then a
//     parallel_for over the rows.
//   - CUDA (ops/cuda/embedding.cu): (index, position) pairs sorted by index with cub's radix
//     sort, which is stable; then one thread per (run of equal indices, column).
//
// Both start each row from zero and accumulate with plain additions in the dtype's accumulation
// type (float32 for float16 and bfloat16, rounded once at the end; float64 for float64, CPU
// only), so for float32 and the 16-bit dtypes the CPU and CUDA gradients are equal to the bit,
// not only repeatable. One row's terms are summed serially: an index that fills most of a batch
// is as slow as its count, which is what determinism costs here.
#include "minidl/ops/embedding.h"

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding_kernels.h"
#include "minidl/ops/indexing.h"

namespace minidl {

namespace {

void check_embedding_arguments(const Tensor& weight, const Tensor& indices) {
  check_defined(weight, "embedding", "weight");
  check_defined(indices, "embedding", "indices");
  MINIDL_CHECK(weight.dim() == 2,
               "embedding: expected a 2-D weight [num_embeddings, embedding_dim], got shape ",
               weight.sizes());
  MINIDL_CHECK(is_floating_point(weight.dtype()),
               "embedding: expected a floating-point weight (float32, float64, float16 or "
               "bfloat16), got ",
               weight.dtype());
  MINIDL_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32,
               "embedding: expected int64 or int32 indices, got ", indices.dtype());
  MINIDL_CHECK(indices.device() == weight.device(), "embedding: expected the indices on the ",
               "weight's device ", weight.device(), ", got ", indices.device());
}

// padding_idx in [-num_embeddings, num_embeddings) as a row, or kNoPaddingRow.
int64_t padding_row(std::optional<int64_t> padding_idx, int64_t num_embeddings) {
  if (!padding_idx) return kNoPaddingRow;
  const int64_t idx = *padding_idx;
  MINIDL_CHECK(idx >= -num_embeddings && idx < num_embeddings, "embedding: expected padding_idx ",
               "in [", -num_embeddings, ", ", num_embeddings, ") for an embedding table of ",
               num_embeddings, " rows, got ", idx);
  return idx < 0 ? idx + num_embeddings : idx;
}

// The weight's gradient as recorded ops (create_graph): the output gradient's rows added into
// the rows their indices name (index_add, in the same ascending order as the kernel), the
// padding row left at zero.
Tensor embedding_gradient_recorded(const Tensor& grad, const Tensor& indices,
                                   const Shape& weight_sizes, int64_t padding) {
  const int64_t columns = weight_sizes[1];
  Tensor rows = grad.reshape({-1, columns});
  const Tensor flat_indices = indices.reshape({-1}).to(kInt64);
  if (padding != kNoPaddingRow) rows = where(eq(flat_indices, padding).unsqueeze(1), 0.0, rows);
  return index_add(zeros(weight_sizes, grad.options()), 0, flat_indices, rows);
}

}  // namespace

std::string embedding_index_error(int64_t index, int64_t position, int64_t num_embeddings) {
  return detail::concat("embedding: index ", index, " at position ", position,
                        " is out of range for an embedding table of ", num_embeddings, " rows");
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  const ProfileScope profile("embedding", {weight, indices});
  check_embedding_arguments(weight, indices);
  const int64_t num_embeddings = weight.size(0);
  const int64_t padding = padding_row(padding_idx, num_embeddings);
  Shape out_sizes = indices.sizes();
  out_sizes.push_back(weight.size(1));
  Tensor out = empty(out_sizes, weight.options());
  const Tensor indices_contiguous = indices.contiguous();
  const EmbeddingKernels& kernels = kernels_for<EmbeddingKernels>(weight.device());
  {
    NoGradGuard no_grad;
    kernels.embedding(out, weight.contiguous(), indices_contiguous);
  }
  if (autograd::needs_grad({weight})) {
    autograd::SavedTensor saved_indices(indices_contiguous, "embedding");
    const Shape& weight_sizes = weight.sizes();
    autograd::record(
        out, "EmbeddingBackward", {weight},
        [saved_indices, weight_sizes, padding](const Tensor& grad) {
          if (GradMode::is_enabled())
            return std::vector<Tensor>{
                embedding_gradient_recorded(grad, saved_indices.get(), weight_sizes, padding)};
          Tensor grad_weight = empty(weight_sizes, grad.options());
          kernels_for<EmbeddingKernels>(grad.device())
              .embedding_backward(grad_weight, grad.contiguous(), saved_indices.get(), padding);
          return std::vector<Tensor>{grad_weight};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

}  // namespace minidl
