// CUDA kernels of ops/sort_kernels.h: bitonic sorting networks over each row, padded to a power
// of two, comparing with the total order of Note [Sort order] (ops/sort_math.h), so the result
// is the CPU's exactly (a sorting network is not stable, but under a total order with the
// position as tie-break there is only one sorted result).
//
// - Rows of up to kSharedSortLimit elements: one block per row sorts the row in shared memory
//   (values and int32 positions), then writes the first k.
// - Longer rows (a vocabulary of 50257 or 65536 logits): the same network in global memory,
//   one launch per stage (log2(P) (log2(P) + 1) / 2 launches: 136 for P = 65536), on scratch
//   buffers from the caching allocator. O(P log^2 P) work per row.
// Padding positions (>= size) sort after every real element in either direction.
#include <cuda_runtime.h>

#include <algorithm>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/sort_kernels.h"
#include "minidl/ops/sort_math.h"

namespace minidl::cuda {

namespace {

constexpr int kMaxSortThreads = 1024;  // threads of a shared-memory sort block
constexpr int64_t kMaxBlocks = 65536;  // grid-stride loops cover the rest

// ---- kernels ----

// Whether (a, position_a) goes before (b, position_b), padding last.
template <class T>
__device__ bool goes_before(T a, int position_a, T b, int position_b, int size, bool descending) {
  if (position_a >= size) return false;
  if (position_b >= size) return true;
  return sort_math::precedes(a, position_a, b, position_b, descending);
}

// One compare-exchange of the bitonic network: elements i < partner of a run of `run_size`,
// in ascending order when bit `run_size` of i is clear.
template <class T>
__device__ void compare_exchange(T* values, int* positions, int i, int partner, int run_size,
                                 int size, bool descending) {
  const bool ascending_run = (i & run_size) == 0;
  const bool swap = ascending_run ? goes_before(values[partner], positions[partner], values[i],
                                                positions[i], size, descending)
                                  : goes_before(values[i], positions[i], values[partner],
                                                positions[partner], size, descending);
  if (swap) {
    const T value = values[i];
    values[i] = values[partner];
    values[partner] = value;
    const int position = positions[i];
    positions[i] = positions[partner];
    positions[partner] = position;
  }
}

// input: [rows, size]; values_out, indices_out: [rows, k]. Dynamic shared memory: padded int32
// positions, then padded values. padded is a power of two >= 2, at most kSharedSortLimit.
template <class T>
__global__ void shared_sort_kernel(T* values_out, int64_t* indices_out, const T* input,
                                   int64_t rows, int size, int k, int padded, bool descending) {
  extern __shared__ int4 shared_words[];  // int4: aligned for any T
  int* positions = reinterpret_cast<int*>(shared_words);
  T* values = reinterpret_cast<T*>(positions + padded);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* row_in = input + row * size;
    for (int i = threadIdx.x; i < padded; i += blockDim.x) {
      positions[i] = i;
      values[i] = i < size ? row_in[i] : T{};
    }
    __syncthreads();
    for (int run_size = 2; run_size <= padded; run_size <<= 1) {
      for (int stride = run_size / 2; stride > 0; stride >>= 1) {
        for (int i = threadIdx.x; i < padded; i += blockDim.x) {
          const int partner = i ^ stride;
          if (partner > i)
            compare_exchange(values, positions, i, partner, run_size, size, descending);
        }
        __syncthreads();
      }
    }
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
      values_out[row * k + j] = values[j];
      indices_out[row * k + j] = positions[j];
    }
    __syncthreads();  // before the next row overwrites shared memory
  }
}

// scratch_values, scratch_positions: [rows, padded] <- the rows of input [rows, size], padded.
template <class T>
__global__ void pad_rows_kernel(T* scratch_values, int* scratch_positions, const T* input,
                                int64_t rows, int size, int padded) {
  const int64_t total = rows * padded;
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t row = e / padded;
    const int column = static_cast<int>(e % padded);
    scratch_positions[e] = column;
    scratch_values[e] = column < size ? input[row * size + column] : T{};
  }
}

// One stage (run_size, stride) of the network over every row of the scratch buffers: a thread
// per pair.
template <class T>
__global__ void global_stage_kernel(T* scratch_values, int* scratch_positions, int64_t rows,
                                    int size, int padded, int run_size, int stride,
                                    bool descending) {
  const int pairs_per_row = padded / 2;
  const int64_t total = rows * pairs_per_row;
  for (const int64_t p : grid_stride_range(total)) {
    const int64_t row = p / pairs_per_row;
    const int pair = static_cast<int>(p % pairs_per_row);
    const int i = (pair / stride) * 2 * stride + pair % stride;
    compare_exchange(scratch_values + row * padded, scratch_positions + row * padded, i, i + stride,
                     run_size, size, descending);
  }
}

// values_out, indices_out [rows, k] <- the first k of each sorted scratch row.
template <class T>
__global__ void take_prefix_kernel(T* values_out, int64_t* indices_out, const T* scratch_values,
                                   const int* scratch_positions, int64_t rows, int k, int padded) {
  const int64_t total = rows * k;
  for (const int64_t e : grid_stride_range(total)) {
    const int64_t source = (e / k) * padded + e % k;
    values_out[e] = scratch_values[source];
    indices_out[e] = scratch_positions[source];
  }
}

// grad_input [rows, size] (zeroed) [r, indices[r, j]] <- grad [rows, k] [r, j].
template <class T>
__global__ void scatter_rows_grad_cuda_kernel(T* grad_input, const T* grad, const int64_t* indices,
                                              int64_t rows, int64_t size, int64_t k) {
  const int64_t total = rows * k;
  for (const int64_t e : grid_stride_range(total))
    grad_input[(e / k) * size + indices[e]] = grad[e];
}

// ---- launchers ----

int padded_size(int64_t size) {
  int64_t padded = 2;
  while (padded < size) padded *= 2;
  return static_cast<int>(padded);
}

void sort_rows_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                      bool descending) {
  const int64_t rows = input.size(0), size = input.size(1), k = values.size(1);
  if (rows == 0 || k == 0) return;
  MINIDL_CHECK(size < (int64_t{1} << 30), "sort: rows of up to 2^30 elements are supported on ",
               "CUDA, got ", size);
  LaunchContext context(input);
  const int padded = padded_size(size);
  visit_device_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* values_out = static_cast<T*>(values.data_ptr());
    auto* indices_out = static_cast<int64_t*>(indices.data_ptr());
    const T* in = static_cast<const T*>(input.data_ptr());
    if (padded <= kSharedSortLimit) {
      const int threads = std::clamp(padded / 2, 32, kMaxSortThreads);
      const size_t shared_bytes = static_cast<size_t>(padded) * (sizeof(int) + sizeof(T));
      const auto blocks = static_cast<unsigned>(std::min(rows, kMaxBlocks));
      shared_sort_kernel<T><<<blocks, threads, shared_bytes, context.stream>>>(
          values_out, indices_out, in, rows, static_cast<int>(size), static_cast<int>(k), padded,
          descending);
      MINIDL_LAUNCH_CHECK();
      return;
    }
    // Scratch from the caching allocator (no cudaMalloc once warm).
    Tensor scratch_values = empty({rows, padded}, input.options());
    Tensor scratch_positions = empty({rows, padded}, TensorOptions(kInt32).device(input.device()));
    T* sorted_values = static_cast<T*>(scratch_values.data_ptr());
    int* sorted_positions = static_cast<int*>(scratch_positions.data_ptr());
    const int64_t elements = rows * padded;
    pad_rows_kernel<T><<<grid_stride_blocks(elements, kThreadsPerBlock, kMaxBlocks),
                         kThreadsPerBlock, 0, context.stream>>>(
        sorted_values, sorted_positions, in, rows, static_cast<int>(size), padded);
    MINIDL_LAUNCH_CHECK();
    const unsigned stage_blocks = grid_stride_blocks(elements / 2, kThreadsPerBlock, kMaxBlocks);
    for (int run_size = 2; run_size <= padded; run_size <<= 1) {
      for (int stride = run_size / 2; stride > 0; stride >>= 1) {
        global_stage_kernel<T><<<stage_blocks, kThreadsPerBlock, 0, context.stream>>>(
            sorted_values, sorted_positions, rows, static_cast<int>(size), padded, run_size, stride,
            descending);
        MINIDL_LAUNCH_CHECK();
      }
    }
    take_prefix_kernel<T>
        <<<grid_stride_blocks(rows * k, kThreadsPerBlock, kMaxBlocks), kThreadsPerBlock, 0,
           context.stream>>>(values_out, indices_out, sorted_values, sorted_positions, rows,
                             static_cast<int>(k), padded);
    MINIDL_LAUNCH_CHECK();
  });
}

void scatter_rows_grad_kernel(const Tensor& grad_input, const Tensor& grad, const Tensor& indices) {
  const int64_t rows = grad_input.size(0), size = grad_input.size(1), k = grad.size(1);
  LaunchContext context(grad_input);
  MINIDL_CUDA_CHECK(cudaMemsetAsync(grad_input.data_ptr(), 0, grad_input.nbytes(), context.stream));
  if (rows * k == 0) return;
  visit_device_floating(grad.dtype(), "sort backward", [&](auto zero) {
    using T = decltype(zero);
    scatter_rows_grad_cuda_kernel<T><<<grid_stride_blocks(rows * k, kThreadsPerBlock, kMaxBlocks),
                                       kThreadsPerBlock, 0, context.stream>>>(
        static_cast<T*>(grad_input.data_ptr()), static_cast<const T*>(grad.data_ptr()),
        static_cast<const int64_t*>(indices.data_ptr()), rows, size, k);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const SortKernels SortKernels::kCuda{
    .sort_rows = cuda::sort_rows_kernel,
    .scatter_rows_grad = cuda::scatter_rows_grad_kernel,
};

}  // namespace minidl
