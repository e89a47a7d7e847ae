// CUDA embedding: the row gather and its deterministic backward, a stable radix sort of
// (index, position) pairs and an in-order sum of each index's run (Note [Deterministic embedding
// backward] in ops/embedding.cpp).
//
// Conventions (ops/embedding_kernels.h): contiguous tensors; indices [count] (int64 or int32),
// weight and grad_weight [num_embeddings, dim], out and grad [count, dim]. Both kernels
// overwrite their output. An out-of-range index is reported through Note [Deferred device
// errors] (core/cuda/device_error.h): the forward writes a zero row in its place, the backward
// skips it. The temporary buffers of the backward come from minidl's caching allocator
// (tensors from empty()), so a warm step calls no cudaMalloc.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/device_error.cuh"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/embedding_kernels.h"

namespace minidl::cuda {

namespace {

// Grid-stride loops cover any element count; more blocks than this only add scheduling cost.
constexpr int64_t kMaxBlocks = 4096;

unsigned int blocks_for(int64_t elements) {
  return grid_stride_blocks(elements, kThreadsPerBlock, kMaxBlocks);
}

// The index of a dropped term in the sort: past every real row, so it sorts last and is summed
// into nothing.
__host__ __device__ constexpr uint64_t dropped_key(int64_t num_embeddings) {
  return static_cast<uint64_t>(num_embeddings);
}

// Bits the radix sort needs for keys in [0, num_embeddings] (the dropped key included).
int key_bits(int64_t num_embeddings) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= static_cast<uint64_t>(num_embeddings)) ++bits;
  return bits;
}

// ---- kernels ----

// out [count, dim] = weight [num_embeddings, dim] at rows indices[j]. Word is an unsigned
// integer as wide as the element: a gather only moves bits, and zero bits are 0.0.
template <class Word, class Index>
__global__ void embedding_forward(Word* out, const Word* weight, const Index* indices,
                                  int64_t num_embeddings, int64_t dim, int64_t total,
                                  DeviceErrorSlot error_slot) {
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t j = e / dim, column = e % dim;
    const int64_t row = indices[j];
    if (row < 0 || row >= num_embeddings) [[unlikely]] {
      if (column == 0) report_device_error(error_slot, row, j, num_embeddings);
      out[e] = Word{0};
      continue;
    }
    out[e] = weight[row * dim + column];
  }
}

// keys [count] = the row each position adds to (dropped_key for padding_row and out-of-range
// indices); positions [count] = 0, 1, ..., the values the stable sort carries along.
template <class Index>
__global__ void embedding_sort_keys(uint64_t* keys, int64_t* positions, const Index* indices,
                                    int64_t num_embeddings, int64_t padding_row, int64_t count) {
  for (const int64_t j : grid_stride_range(count)) {
    const int64_t row = indices[j];
    const bool dropped = row < 0 || row >= num_embeddings || row == padding_row;
    keys[j] = dropped ? dropped_key(num_embeddings) : static_cast<uint64_t>(row);
    positions[j] = j;
  }
}

// For each run of equal keys in sorted_keys [count] and each column: grad_weight[key, column] =
// the sum of grad[position, column] over the run's positions, ascending (the sort was stable),
// in float32. Element e = (i, column) of the sorted order; only the thread at a run's first
// element sums it. Rows without a run keep the zeros the launcher wrote.
template <class T>
__global__ void embedding_sum_runs(T* grad_weight, const T* grad, const uint64_t* sorted_keys,
                                   const int64_t* sorted_positions, int64_t num_embeddings,
                                   int64_t dim, int64_t count) {
  const int64_t total = count * dim;
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t i = e / dim, column = e % dim;
    const uint64_t key = sorted_keys[i];
    if (key == dropped_key(num_embeddings)) continue;
    if (i > 0 && sorted_keys[i - 1] == key) continue;  // not the first of its run
    float sum = 0.0f;
    for (int64_t k = i; k < count && sorted_keys[k] == key; ++k)
      sum += static_cast<float>(grad[sorted_positions[k] * dim + column]);
    grad_weight[static_cast<int64_t>(key) * dim + column] = T(sum);
  }
}

// Calls fn(Word{}) with the unsigned integer as wide as a device floating dtype's elements.
template <class Fn>
void visit_floating_width(DType dtype, Fn&& fn) {
  switch (element_size(dtype)) {
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    default: MINIDL_INTERNAL_ASSERT(false, "embedding: a weight of dtype ", dtype, " on CUDA");
  }
}

// ---- launchers ----

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t total = out.numel();
  if (total == 0) return;
  LaunchContext context(weight);
  const DeviceErrorSlot error_slot = device_error_slot(context.device, embedding_index_error);
  visit_floating_width(weight.dtype(), [&](auto word) {
    using Word = decltype(word);
    visit_embedding_index(indices.dtype(), [&](auto index_zero) {
      using Index = decltype(index_zero);
      embedding_forward<Word, Index><<<blocks_for(total), kThreadsPerBlock, 0, context.stream>>>(
          static_cast<Word*>(out.data_ptr()), static_cast<const Word*>(weight.data_ptr()),
          static_cast<const Index*>(indices.data_ptr()), weight.size(0), weight.size(1), total,
          error_slot);
      MINIDL_LAUNCH_CHECK();
    });
  });
}

void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices,
                               int64_t padding_row) {
  const int64_t num_embeddings = grad_weight.size(0), dim = grad_weight.size(1);
  const int64_t count = indices.numel();
  LaunchContext context(grad_weight);
  // Rows that no index names stay zero (zero bits are 0.0 in every floating dtype).
  MINIDL_CUDA_CHECK(
      cudaMemsetAsync(grad_weight.data_ptr(), 0, grad_weight.nbytes(), context.stream));
  if (count == 0 || dim == 0) return;

  const TensorOptions keys_options = TensorOptions(kInt64).device(indices.device());
  // uint64 keys and int64 positions, stored in int64 tensors: [count] each, before and after
  // the sort.
  Tensor keys = empty({count}, keys_options), positions = empty({count}, keys_options);
  Tensor sorted_keys = empty({count}, keys_options),
         sorted_positions = empty({count}, keys_options);
  auto* key_data = reinterpret_cast<uint64_t*>(keys.data_ptr());
  auto* sorted_key_data = reinterpret_cast<uint64_t*>(sorted_keys.data_ptr());
  visit_embedding_index(indices.dtype(), [&](auto index_zero) {
    using Index = decltype(index_zero);
    embedding_sort_keys<Index><<<blocks_for(count), kThreadsPerBlock, 0, context.stream>>>(
        key_data, positions.data_ptr<int64_t>(), static_cast<const Index*>(indices.data_ptr()),
        num_embeddings, padding_row, count);
    MINIDL_LAUNCH_CHECK();
  });

  // Stable: equal keys keep their positions ascending.
  const int end_bit = key_bits(num_embeddings);
  size_t temporary_bytes = 0;
  MINIDL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temporary_bytes, key_data, sorted_key_data, positions.data_ptr<int64_t>(),
      sorted_positions.data_ptr<int64_t>(), count, 0, end_bit, context.stream));
  Tensor temporary = empty({static_cast<int64_t>(temporary_bytes)},
                           TensorOptions(kUInt8).device(indices.device()));
  MINIDL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temporary.data_ptr(), temporary_bytes, key_data,
                                                    sorted_key_data, positions.data_ptr<int64_t>(),
                                                    sorted_positions.data_ptr<int64_t>(), count, 0,
                                                    end_bit, context.stream));

  visit_device_floating(grad_weight.dtype(), "embedding backward", [&](auto zero) {
    using T = decltype(zero);
    embedding_sum_runs<T><<<blocks_for(count * dim), kThreadsPerBlock, 0, context.stream>>>(
        static_cast<T*>(grad_weight.data_ptr()), static_cast<const T*>(grad.data_ptr()),
        sorted_key_data, sorted_positions.data_ptr<int64_t>(), num_embeddings, dim, count);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const EmbeddingKernels EmbeddingKernels::kCuda{
    .embedding = cuda::embedding_kernel,
    .embedding_backward = cuda::embedding_backward_kernel,
};

}  // namespace minidl
