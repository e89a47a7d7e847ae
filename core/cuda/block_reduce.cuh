#pragma once
// Warp and block reductions of per-thread accumulators (include from .cu files only). Sums,
// extremes, moments, softmax statistics and batch norm's statistics all merge their threads'
// accumulators these ways, so the merge trees (and with them the rounding) are written once.
//
// Conventions:
// - An Op has `Acc identity() const` and `Acc combine(Acc, Acc) const` (ops/reduce_math.h,
//   ops/norm_math.h). Acc is any trivially copyable type.
// - A "row" is the blockDim.x threads sharing one threadIdx.y. The row reductions need
//   blockDim.x to be 1, 32, or a multiple of 32 with blockDim.y == 1; every thread of a row
//   calls them (a thread that returned early may only be missing from a row of <= 32 threads).
// - Each merge happens in a fixed tree, so results repeat exactly from run to run.
#include <cuda_runtime.h>

#include <cstring>

namespace minidl::cuda {

inline constexpr int kWarpSize = 32;

namespace detail {

// The words of `value`, shuffled: __shfl_*_sync moves 32 bits, accumulators are wider.
template <class V, class Shuffle>
__device__ __forceinline__ V shuffle_words(const V& value, Shuffle shuffle) {
  constexpr int kWords = (sizeof(V) + sizeof(int) - 1) / sizeof(int);
  int words[kWords] = {};
  memcpy(words, &value, sizeof(V));
#pragma unroll
  for (int w = 0; w < kWords; ++w) words[w] = shuffle(words[w]);
  V result;
  memcpy(&result, words, sizeof(V));
  return result;
}

}  // namespace detail

// __shfl_down_sync of any accumulator (every lane of the warp takes part).
template <class V>
__device__ __forceinline__ V shuffle_down(const V& value, int offset) {
  return detail::shuffle_words(
      value, [offset](int word) { return __shfl_down_sync(0xffffffffu, word, offset); });
}

// __shfl_xor_sync of any accumulator (every lane of the warp takes part).
template <class V>
__device__ __forceinline__ V shuffle_xor(const V& value, int lane_mask) {
  return detail::shuffle_words(
      value, [lane_mask](int word) { return __shfl_xor_sync(0xffffffffu, word, lane_mask); });
}

// Merges the accumulators of a warp's lanes; the result is valid in lane 0.
template <class Op, class Acc>
__device__ __forceinline__ Acc warp_reduce(const Op& op, Acc acc) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    acc = op.combine(acc, shuffle_down(acc, offset));
  return acc;
}

// Merges the accumulators of a warp's lanes; every lane gets the result (a butterfly: lane 0
// merges in the same tree as warp_reduce).
template <class Op, class Acc>
__device__ __forceinline__ Acc warp_all_reduce(const Op& op, Acc acc) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    acc = op.combine(acc, shuffle_xor(acc, offset));
  return acc;
}

namespace detail {

// Hands each warp's accumulator (as its lane 0 holds it) to lane w of every warp of the row,
// lane w getting warp w's and the lanes past the last warp the identity, through shared memory.
template <class Op, class Acc>
__device__ Acc exchange_warp_results(const Op& op, Acc acc) {
  __shared__ alignas(16) unsigned char storage[kWarpSize * sizeof(Acc)];
  Acc* per_warp = reinterpret_cast<Acc*>(storage);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  __syncthreads();  // an earlier call's readers are done with per_warp
  if (lane == 0) per_warp[warp] = acc;
  __syncthreads();
  return lane < static_cast<int>(blockDim.x / kWarpSize) ? per_warp[lane] : op.identity();
}

}  // namespace detail

// Merges the accumulators of a row; the result is valid in threadIdx.x == 0.
template <class Op, class Acc>
__device__ Acc row_reduce(const Op& op, Acc acc) {
  if (blockDim.x == 1) return acc;
  acc = warp_reduce(op, acc);
  if (blockDim.x == kWarpSize) return acc;
  acc = detail::exchange_warp_results(op, acc);
  if (threadIdx.x < kWarpSize) acc = warp_reduce(op, acc);
  return acc;
}

// Merges the accumulators of a row; every thread of the row gets the result.
template <class Op, class Acc>
__device__ Acc row_all_reduce(const Op& op, Acc acc) {
  if (blockDim.x == 1) return acc;
  acc = warp_all_reduce(op, acc);
  if (blockDim.x == kWarpSize) return acc;
  return warp_all_reduce(op, detail::exchange_warp_results(op, acc));
}

// Merges, for each threadIdx.x of a (kColumns, kRows) block, the accumulators of its kRows
// threads in threadIdx.y order; the result is valid where threadIdx.y == 0. Every thread of
// the block calls it; calls may follow one another.
template <int kColumns, int kRows, class Op, class Acc>
__device__ Acc column_reduce(const Op& op, Acc acc) {
  __shared__ alignas(16) unsigned char storage[kRows * kColumns * sizeof(Acc)];
  Acc* tile = reinterpret_cast<Acc*>(storage);
  __syncthreads();  // an earlier call's row 0 is done reading the tile
  tile[threadIdx.y * kColumns + threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0)
    for (int y = 1; y < kRows; ++y) acc = op.combine(acc, tile[y * kColumns + threadIdx.x]);
  return acc;
}

// As column_reduce, for many rows (kRows a power of two): the rows merge in a pairwise tree, row
// y with row y + half for half = kRows / 2, ..., 1, in log2(kRows) steps instead of kRows - 1
// merges in one thread. The result is valid where threadIdx.y == 0. Every thread of the block
// calls it; calls may follow one another (a thread's several accumulators, one per call).
template <int kColumns, int kRows, class Op, class Acc>
__device__ Acc column_tree_reduce(const Op& op, Acc acc) {
  static_assert(kRows > 0 && (kRows & (kRows - 1)) == 0, "kRows must be a power of two");
  __shared__ alignas(16) unsigned char storage[kRows * kColumns * sizeof(Acc)];
  Acc* tile = reinterpret_cast<Acc*>(storage);
  __syncthreads();  // an earlier call's readers are done with the tile
  tile[threadIdx.y * kColumns + threadIdx.x] = acc;
  for (int half = kRows / 2; half > 0; half /= 2) {
    __syncthreads();
    // Rows [0, half) read rows [half, 2 * half) and write their own: no row is both.
    if (threadIdx.y < half) {
      acc = op.combine(acc, tile[(threadIdx.y + half) * kColumns + threadIdx.x]);
      tile[threadIdx.y * kColumns + threadIdx.x] = acc;
    }
  }
  return acc;
}

}  // namespace minidl::cuda
