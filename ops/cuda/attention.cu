// CUDA scaled dot-product attention: fused, FlashAttention-style kernels (Note [Blocked
// attention] in ops/attention_math.h) with the CPU's masking, online softmax and Philox dropout
// mask (the same functions of ops/attention_math.h), in float32 accumulators, without tensor
// cores.
//
// Conventions (see also ops/attention_kernels.h):
// - Blocks are (32, kWarps) threads: warp w works on query row w of a tile, lane c on key c of
//   a 32-key tile. Tiles of queries, keys and values are staged in shared memory in float, rows
//   padded by one element so that the lanes' reads of one column fall in different banks.
// - forward: one block per (kWarps queries, b * H + h); each warp keeps its row's online
//   softmax (identical in all lanes) and Dv / 32 accumulators per lane. Overwrites out and
//   logsumexp.
// - backward: three launches, none with atomics, so results repeat bit for bit:
//     delta   one warp per query row: Delta_i = rowsum(dO_i * O_i) into a float workspace.
//     dK, dV  one block per (32 keys, b * H + h), looping over tiles of kWarps queries in order;
//             each thread owns fixed elements of the [32, D] and [32, Dv] accumulators and sums
//             the tile's rows into them in row order.
//     dQ      one block per (kWarps queries, b * H + h), looping over 32-key tiles in order.
//   dK, dV and dQ are overwritten.
// - head_dim and value_dim are at most kMaxDim (the per-thread accumulators are fixed arrays).
// - Every launch is on the current stream, followed by a launch check; nothing synchronises
//   the host. Dropout refuses CUDA graph capture (its counters advance on the host).
// - These kernels are the last resort (ops/cuda_attention_implementations.h): by default
//   float16 and bfloat16 problems that fit run on cuDNN (ops/cuda/attention_cudnn.cpp), else on
//   the tensor-core kernels of ops/cuda/attention_tensor_cores.cu; MINIDL_CUDA_ATTENTION names
//   one implementation instead. Either direction decides on its own: the implementations'
//   logsumexps are interchangeable.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "minidl/core/ceil_div.h"
#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/attention_math.h"
#include "minidl/ops/cuda/attention_cudnn.h"
#include "minidl/ops/cuda/attention_tensor_cores.h"
#include "minidl/ops/cuda_attention_implementations.h"

namespace minidl::cuda {

namespace {

using Acc = float;  // float64 never reaches the GPU

constexpr int kKeys = kWarpSize;  // keys per tile: one per lane
constexpr int kWarps = 8;         // query rows per tile: one per warp
constexpr int kThreads = kWarpSize * kWarps;
constexpr int kMaxDim = 256;
constexpr int kMaxPerLane = kMaxDim / kWarpSize;                 // forward's Dv accumulators
constexpr int kMaxKeyTileElements = kKeys * kMaxDim / kThreads;  // dK's or dV's per thread
constexpr int kMaxQueryTileElements = kWarps * kMaxDim / kThreads;
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// The warp reductions' operators (core/cuda/block_reduce.cuh).
template <class A>
struct MaxOp {
  __device__ A identity() const { return -attention::infinity<A>(); }
  __device__ A combine(A a, A b) const { return a > b ? a : b; }
};
template <class A>
struct SumOp {
  __device__ A identity() const { return A(0); }
  __device__ A combine(A a, A b) const { return a + b; }
};

// What the kernels need of AttentionParams, as a plain struct for the launch.
template <class T>
struct DeviceProblem {
  const T* query;  // [BH, T, D]
  const T* key;    // [BH, S, D]
  const T* value;  // [BH, S, Dv]
  const bool* boolean_mask;
  const T* additive_mask;
  int64_t mask_strides[4];
  int64_t heads, query_length, key_length;
  int head_dim, value_dim;
  Acc scale, keep_scale;
  bool is_causal;
  double dropout_p;
  uint64_t seed, offset;

  // The end of the keys any of queries [.., last_query] can see.
  __device__ int64_t visible_keys(int64_t last_query) const {
    return is_causal ? (key_length < last_query + 1 ? key_length : last_query + 1) : key_length;
  }

  __device__ Acc score(int64_t bh, int64_t i, int64_t j, Acc q_dot_k) const {
    bool masked_out = is_causal && !attention::causally_visible(i, j);
    Acc additive = 0;
    if (boolean_mask != nullptr || additive_mask != nullptr) {
      const int64_t at = (bh / heads) * mask_strides[0] + (bh % heads) * mask_strides[1] +
                         i * mask_strides[2] + j * mask_strides[3];
      if (boolean_mask != nullptr)
        masked_out = masked_out || !boolean_mask[at];
      else
        additive = static_cast<Acc>(additive_mask[at]);
    }
    return attention::masked_score(q_dot_k * scale, additive, masked_out);
  }

  __device__ Acc dropout_factor(int64_t bh, int64_t i, int64_t j) const {
    if (dropout_p == 0.0) return Acc(1);
    return attention::dropout_factor(
        seed, attention::dropout_counter(offset, bh, i, j, query_length, key_length), dropout_p,
        keep_scale);
  }
};

template <class T>
DeviceProblem<T> device_problem(const AttentionParams& params, const Tensor& query,
                                const Tensor& key, const Tensor& value, const Tensor& mask) {
  DeviceProblem<T> problem{};
  problem.query = query.data_ptr<T>();
  problem.key = key.data_ptr<T>();
  problem.value = value.data_ptr<T>();
  problem.boolean_mask = params.mask == AttentionMask::Boolean ? mask.data_ptr<bool>() : nullptr;
  problem.additive_mask = params.mask == AttentionMask::Additive ? mask.data_ptr<T>() : nullptr;
  for (int d = 0; d < 4; ++d) problem.mask_strides[d] = params.mask_strides[static_cast<size_t>(d)];
  problem.heads = params.heads;
  problem.query_length = params.query_length;
  problem.key_length = params.key_length;
  problem.head_dim = static_cast<int>(params.head_dim);
  problem.value_dim = static_cast<int>(params.value_dim);
  problem.scale = static_cast<Acc>(params.scale);
  problem.keep_scale = static_cast<Acc>(attention::dropout_keep_scale(params.dropout_p));
  problem.is_causal = params.is_causal;
  problem.dropout_p = params.dropout_p;
  problem.seed = params.dropout_start.seed;
  problem.offset = params.dropout_start.offset;
  return problem;
}

// rows [first, first + count) of a [.., width] tensor into shared memory as float, row stride
// width + 1; rows past count become 0. All threads of the block call it.
template <class T>
__device__ void stage_rows(Acc* tile, const T* rows, int64_t first, int64_t count, int tile_rows,
                           int width) {
  for (int e = threadIdx.y * blockDim.x + threadIdx.x; e < tile_rows * width;
       e += blockDim.x * blockDim.y) {
    const int r = e / width, d = e % width;
    tile[r * (width + 1) + d] =
        r < count ? static_cast<Acc>(rows[(first + r) * width + d]) : Acc(0);
  }
}

__device__ Acc dot_rows(const Acc* a, const Acc* b, int n) {
  Acc sum = 0;
  for (int d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// ---- kernels ----

// grid (ceil(T / kWarps), B * H), block (32, kWarps), dynamic shared memory
// kWarps * (D + 1) + kKeys * (D + 1) + kKeys * (Dv + 1) floats.
// out: [BH, T, Dv], logsumexp: [BH, T].
template <class T>
__global__ void attention_forward_kernel(DeviceProblem<T> problem, T* out, Acc* logsumexp) {
  extern __shared__ Acc shared[];
  const int D = problem.head_dim, Dv = problem.value_dim;
  Acc* queries = shared;                   // [kWarps, D + 1]
  Acc* keys = queries + kWarps * (D + 1);  // [kKeys, D + 1]
  Acc* values = keys + kKeys * (D + 1);    // [kKeys, Dv + 1]
  const int64_t bh = blockIdx.y;
  const int64_t first_query = static_cast<int64_t>(blockIdx.x) * kWarps;
  const int64_t query_count = min(static_cast<int64_t>(kWarps), problem.query_length - first_query);
  const int lane = threadIdx.x, row = threadIdx.y;
  const int64_t i = first_query + row;
  const bool active = row < query_count;

  stage_rows(queries, problem.query + bh * problem.query_length * D, first_query, query_count,
             kWarps, D);
  attention::OnlineSoftmax<Acc> softmax;
  Acc accumulators[kMaxPerLane];
#pragma unroll
  for (int m = 0; m < kMaxPerLane; ++m) accumulators[m] = 0;

  const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
  for (int64_t first_key = 0; first_key < key_end; first_key += kKeys) {
    const int64_t key_count = min(static_cast<int64_t>(kKeys), key_end - first_key);
    __syncthreads();  // the previous tile's readers are done
    stage_rows(keys, problem.key + bh * problem.key_length * D, first_key, key_count, kKeys, D);
    stage_rows(values, problem.value + bh * problem.key_length * Dv, first_key, key_count, kKeys,
               Dv);
    __syncthreads();
    const int64_t j = first_key + lane;
    Acc score = -attention::infinity<Acc>();
    if (active && lane < key_count)
      score = problem.score(bh, i, j, dot_rows(queries + row * (D + 1), keys + lane * (D + 1), D));
    const Acc block_max = warp_all_reduce(MaxOp<Acc>{}, score);
    const Acc factor = softmax.raise_max(block_max);
#pragma unroll
    for (int m = 0; m < kMaxPerLane; ++m) accumulators[m] *= factor;
    const Acc weight = softmax.weight(score);
    softmax.sum += warp_all_reduce(SumOp<Acc>{}, weight);
    const Acc kept = weight != Acc(0) ? weight * problem.dropout_factor(bh, i, j) : Acc(0);
    for (int c = 0; c < key_count; ++c) {
      const Acc key_weight = __shfl_sync(0xffffffffu, kept, c);
      if (key_weight == Acc(0)) continue;  // the same for the whole warp
#pragma unroll
      for (int m = 0; m < kMaxPerLane; ++m) {
        const int e = lane + m * kWarpSize;
        if (e < Dv) accumulators[m] += key_weight * values[c * (Dv + 1) + e];
      }
    }
  }
  if (!active) return;
  const int64_t row_index = bh * problem.query_length + i;
  const Acc inverse_sum = softmax.inverse_sum();
#pragma unroll
  for (int m = 0; m < kMaxPerLane; ++m) {
    const int e = lane + m * kWarpSize;
    if (e < Dv) out[row_index * Dv + e] = static_cast<T>(accumulators[m] * inverse_sum);
  }
  if (lane == 0) logsumexp[row_index] = softmax.logsumexp();
}

// grid-stride over the BH * T rows, one warp each. delta: [BH * T].
template <class T>
__global__ void attention_delta_kernel(const T* grad_out, const T* out, Acc* delta, int64_t rows,
                                       int value_dim) {
  const int lane = threadIdx.x;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
       row += warps) {
    Acc sum = 0;
    for (int e = lane; e < value_dim; e += kWarpSize)
      sum += static_cast<Acc>(grad_out[row * value_dim + e]) *
             static_cast<Acc>(out[row * value_dim + e]);
    sum = warp_reduce(SumOp<Acc>{}, sum);
    if (lane == 0) delta[row] = sum;
  }
}

// The shared tiles of the two gradient kernels.
struct BackwardTiles {
  Acc* queries;    // [kWarps, D + 1]
  Acc* grad_outs;  // [kWarps, Dv + 1]
  Acc* keys;       // [kKeys, D + 1]
  Acc* values;     // [kKeys, Dv + 1]
  Acc* dropped;    // [kWarps, kKeys]: P_ij * dropout factor
  Acc* gradients;  // [kWarps, kKeys]: dScore_ij * scale

  __device__ static BackwardTiles carve(Acc* shared, int D, int Dv) {
    BackwardTiles tiles;
    tiles.queries = shared;
    tiles.grad_outs = tiles.queries + kWarps * (D + 1);
    tiles.keys = tiles.grad_outs + kWarps * (Dv + 1);
    tiles.values = tiles.keys + kKeys * (D + 1);
    tiles.dropped = tiles.values + kKeys * (Dv + 1);
    tiles.gradients = tiles.dropped + kWarps * kKeys;
    return tiles;
  }
  static size_t bytes(int D, int Dv) {
    return sizeof(Acc) *
           (static_cast<size_t>(kWarps + kKeys) * (D + 1 + Dv + 1) + 2 * kWarps * kKeys);
  }
};

// Fills tiles.dropped and tiles.gradients for the staged tiles: warp row, lane key. Entries
// outside the problem are 0.
template <class T>
__device__ void recompute_tile(const DeviceProblem<T>& problem, const BackwardTiles& tiles,
                               int64_t bh, int64_t first_query, int64_t query_count,
                               int64_t first_key, int64_t key_count, const Acc* logsumexp,
                               const Acc* delta) {
  const int D = problem.head_dim, Dv = problem.value_dim;
  const int lane = threadIdx.x, row = threadIdx.y;
  Acc dropped = 0, gradient = 0;
  if (row < query_count && lane < key_count) {
    const int64_t i = first_query + row, j = first_key + lane;
    const int64_t row_index = bh * problem.query_length + i;
    const Acc score = problem.score(
        bh, i, j, dot_rows(tiles.queries + row * (D + 1), tiles.keys + lane * (D + 1), D));
    const Acc probability = attention::probability(score, logsumexp[row_index]);
    if (probability != Acc(0)) {
      const Acc factor = problem.dropout_factor(bh, i, j);
      const Acc grad_probability =
          dot_rows(tiles.grad_outs + row * (Dv + 1), tiles.values + lane * (Dv + 1), Dv) * factor;
      dropped = probability * factor;
      gradient = attention::score_gradient(probability, grad_probability, delta[row_index]) *
                 problem.scale;
    }
  }
  tiles.dropped[row * kKeys + lane] = dropped;
  tiles.gradients[row * kKeys + lane] = gradient;
}

// grid (ceil(S / kKeys), B * H), block (32, kWarps), dynamic shared BackwardTiles::bytes.
// grad_key [BH, S, D], grad_value [BH, S, Dv].
template <class T>
__global__ void attention_key_value_gradient_kernel(DeviceProblem<T> problem, const T* grad_out,
                                                    const Acc* logsumexp, const Acc* delta,
                                                    T* grad_key, T* grad_value) {
  extern __shared__ Acc shared[];
  const int D = problem.head_dim, Dv = problem.value_dim;
  const BackwardTiles tiles = BackwardTiles::carve(shared, D, Dv);
  const int64_t bh = blockIdx.y;
  const int64_t first_key = static_cast<int64_t>(blockIdx.x) * kKeys;
  const int64_t key_count = min(static_cast<int64_t>(kKeys), problem.key_length - first_key);
  const int thread = threadIdx.y * kWarpSize + threadIdx.x;
  const int64_t T_length = problem.query_length;

  stage_rows(tiles.keys, problem.key + bh * problem.key_length * D, first_key, key_count, kKeys, D);
  stage_rows(tiles.values, problem.value + bh * problem.key_length * Dv, first_key, key_count,
             kKeys, Dv);
  // Thread t owns elements t, t + kThreads, ... of the [kKeys, D] and [kKeys, Dv] gradients.
  Acc grad_keys[kMaxKeyTileElements], grad_values[kMaxKeyTileElements];
#pragma unroll
  for (int m = 0; m < kMaxKeyTileElements; ++m) grad_keys[m] = grad_values[m] = 0;

  // Under is_causal, queries before first_key see none of these keys.
  const int64_t query_start = problem.is_causal ? min(T_length, first_key) / kWarps * kWarps : 0;
  for (int64_t first_query = query_start; first_query < T_length; first_query += kWarps) {
    const int64_t query_count = min(static_cast<int64_t>(kWarps), T_length - first_query);
    __syncthreads();  // the previous tile's readers are done
    stage_rows(tiles.queries, problem.query + bh * T_length * D, first_query, query_count, kWarps,
               D);
    stage_rows(tiles.grad_outs, grad_out + bh * T_length * Dv, first_query, query_count, kWarps,
               Dv);
    __syncthreads();
    recompute_tile(problem, tiles, bh, first_query, query_count, first_key, key_count, logsumexp,
                   delta);
    __syncthreads();
#pragma unroll
    for (int m = 0; m < kMaxKeyTileElements; ++m) {
      const int e = thread + m * kThreads;
      if (e < kKeys * D) {
        const int c = e / D, d = e % D;
        for (int r = 0; r < kWarps; ++r)
          grad_keys[m] += tiles.gradients[r * kKeys + c] * tiles.queries[r * (D + 1) + d];
      }
      if (e < kKeys * Dv) {
        const int c = e / Dv, d = e % Dv;
        for (int r = 0; r < kWarps; ++r)
          grad_values[m] += tiles.dropped[r * kKeys + c] * tiles.grad_outs[r * (Dv + 1) + d];
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kMaxKeyTileElements; ++m) {
    const int e = thread + m * kThreads;
    if (e < kKeys * D && e / D < key_count)
      grad_key[(bh * problem.key_length + first_key) * D + e] = static_cast<T>(grad_keys[m]);
    if (e < kKeys * Dv && e / Dv < key_count)
      grad_value[(bh * problem.key_length + first_key) * Dv + e] = static_cast<T>(grad_values[m]);
  }
}

// grid (ceil(T / kWarps), B * H), block (32, kWarps), dynamic shared BackwardTiles::bytes.
// grad_query [BH, T, D].
template <class T>
__global__ void attention_query_gradient_kernel(DeviceProblem<T> problem, const T* grad_out,
                                                const Acc* logsumexp, const Acc* delta,
                                                T* grad_query) {
  extern __shared__ Acc shared[];
  const int D = problem.head_dim, Dv = problem.value_dim;
  const BackwardTiles tiles = BackwardTiles::carve(shared, D, Dv);
  const int64_t bh = blockIdx.y;
  const int64_t first_query = static_cast<int64_t>(blockIdx.x) * kWarps;
  const int64_t T_length = problem.query_length;
  const int64_t query_count = min(static_cast<int64_t>(kWarps), T_length - first_query);
  const int thread = threadIdx.y * kWarpSize + threadIdx.x;

  stage_rows(tiles.queries, problem.query + bh * T_length * D, first_query, query_count, kWarps, D);
  stage_rows(tiles.grad_outs, grad_out + bh * T_length * Dv, first_query, query_count, kWarps, Dv);
  // Thread t owns elements t, t + kThreads, ... of the [kWarps, D] gradient.
  Acc grad_queries[kMaxQueryTileElements];
#pragma unroll
  for (int m = 0; m < kMaxQueryTileElements; ++m) grad_queries[m] = 0;

  const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
  for (int64_t first_key = 0; first_key < key_end; first_key += kKeys) {
    const int64_t key_count = min(static_cast<int64_t>(kKeys), key_end - first_key);
    __syncthreads();  // the previous tile's readers are done
    stage_rows(tiles.keys, problem.key + bh * problem.key_length * D, first_key, key_count, kKeys,
               D);
    stage_rows(tiles.values, problem.value + bh * problem.key_length * Dv, first_key, key_count,
               kKeys, Dv);
    __syncthreads();
    recompute_tile(problem, tiles, bh, first_query, query_count, first_key, key_count, logsumexp,
                   delta);
    __syncthreads();
#pragma unroll
    for (int m = 0; m < kMaxQueryTileElements; ++m) {
      const int e = thread + m * kThreads;
      if (e < kWarps * D) {
        const int r = e / D, d = e % D;
        for (int c = 0; c < kKeys; ++c)
          grad_queries[m] += tiles.gradients[r * kKeys + c] * tiles.keys[c * (D + 1) + d];
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kMaxQueryTileElements; ++m) {
    const int e = thread + m * kThreads;
    if (e < kWarps * D && e / D < query_count)
      grad_query[(bh * T_length + first_query) * D + e] = static_cast<T>(grad_queries[m]);
  }
}

// ---- launchers ----

size_t forward_shared_bytes(int D, int Dv) {
  return sizeof(Acc) * (static_cast<size_t>(kWarps + kKeys) * (D + 1) + kKeys * (Dv + 1));
}

// Raises a kernel's dynamic shared memory limit past the default 48 KiB where it needs more
// (the device allows up to its sharedMemPerBlockOptin; for kMaxDim = 256 the largest tiles
// take about 85 KiB).
template <class Kernel>
void allow_shared_bytes(Kernel kernel, size_t bytes) {
  if (bytes > kDefaultSharedBytes)
    MINIDL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
}

void check_supported(const AttentionParams& params) {
  MINIDL_CHECK(params.head_dim <= kMaxDim && params.value_dim <= kMaxDim,
               "scaled_dot_product_attention: on CUDA, expected head dims D and Dv of at most ",
               kMaxDim, ", got D = ", params.head_dim, " and Dv = ", params.value_dim);
  MINIDL_CHECK(params.batch * params.heads <= 65535,
               "scaled_dot_product_attention: on CUDA, expected at most 65535 (batch, head) pairs, "
               "got ",
               params.batch * params.heads);
}

void check_dropout_not_captured(const AttentionParams& params, int device) {
  if (params.dropout_p > 0.0)
    check_not_capturing(device, "scaled_dot_product_attention with dropout on CUDA",
                        "its mask comes from a Philox counter offset that advances on the host, so "
                        "every replay would drop the same entries again; run steps with dropout "
                        "eagerly");
}

void cuda_core_forward(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                       const Tensor& key, const Tensor& value, const Tensor& mask,
                       const AttentionParams& params) {
  check_supported(params);
  LaunchContext context(query);
  check_dropout_not_captured(params, context.device);
  const int D = static_cast<int>(params.head_dim), Dv = static_cast<int>(params.value_dim);
  const dim3 grid(static_cast<unsigned>(ceil_div(params.query_length, int64_t{kWarps})),
                  static_cast<unsigned>(params.batch * params.heads));
  const dim3 block(kWarpSize, kWarps);
  const size_t shared_bytes = forward_shared_bytes(D, Dv);
  visit_device_floating(query.dtype(), "scaled_dot_product_attention", [&](auto zero) {
    using T = decltype(zero);
    allow_shared_bytes(attention_forward_kernel<T>, shared_bytes);
    attention_forward_kernel<T><<<grid, block, shared_bytes, context.stream>>>(
        device_problem<T>(params, query, key, value, mask), out.data_ptr<T>(),
        logsumexp.data_ptr<Acc>());
    MINIDL_LAUNCH_CHECK();
  });
}

void cuda_core_backward(const Tensor& grad_query, const Tensor& grad_key, const Tensor& grad_value,
                        const Tensor& grad_out, const Tensor& query, const Tensor& key,
                        const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                        const Tensor& mask, const AttentionParams& params) {
  check_supported(params);
  LaunchContext context(query);
  check_dropout_not_captured(params, context.device);
  const int D = static_cast<int>(params.head_dim), Dv = static_cast<int>(params.value_dim);
  const int64_t heads_total = params.batch * params.heads;
  const int64_t rows = heads_total * params.query_length;
  Tensor delta = empty({std::max<int64_t>(rows, 1)}, query.options().dtype(kFloat32));
  const dim3 block(kWarpSize, kWarps);
  const size_t shared_bytes = BackwardTiles::bytes(D, Dv);
  visit_device_floating(query.dtype(), "scaled_dot_product_attention backward", [&](auto zero) {
    using T = decltype(zero);
    const DeviceProblem<T> problem = device_problem<T>(params, query, key, value, mask);
    if (rows > 0) {
      const unsigned delta_blocks = resident_grid_stride_blocks(rows, kWarps, 8, context.device);
      attention_delta_kernel<T><<<delta_blocks, block, 0, context.stream>>>(
          grad_out.data_ptr<T>(), out.data_ptr<T>(), delta.data_ptr<Acc>(), rows, Dv);
      MINIDL_LAUNCH_CHECK();
    }
    if (params.key_length > 0 && heads_total > 0) {
      const dim3 grid(static_cast<unsigned>(ceil_div(params.key_length, int64_t{kKeys})),
                      static_cast<unsigned>(heads_total));
      allow_shared_bytes(attention_key_value_gradient_kernel<T>, shared_bytes);
      attention_key_value_gradient_kernel<T><<<grid, block, shared_bytes, context.stream>>>(
          problem, grad_out.data_ptr<T>(), logsumexp.data_ptr<Acc>(), delta.data_ptr<Acc>(),
          grad_key.data_ptr<T>(), grad_value.data_ptr<T>());
      MINIDL_LAUNCH_CHECK();
    }
    if (rows > 0) {
      const dim3 grid(static_cast<unsigned>(ceil_div(params.query_length, int64_t{kWarps})),
                      static_cast<unsigned>(heads_total));
      allow_shared_bytes(attention_query_gradient_kernel<T>, shared_bytes);
      attention_query_gradient_kernel<T><<<grid, block, shared_bytes, context.stream>>>(
          problem, grad_out.data_ptr<T>(), logsumexp.data_ptr<Acc>(), delta.data_ptr<Acc>(),
          grad_query.data_ptr<T>());
      MINIDL_LAUNCH_CHECK();
    }
  });
}

// The implementation MINIDL_CUDA_ATTENTION selects; an error for cudnn in a build without it,
// rather than a silent fall back that a benchmark would mistake for cuDNN's speed. (The
// functions below are named with cuda::, since the public ones of
// ops/cuda_attention_implementations.h have the same names and argument types.)
CudaAttention selected_implementation() {
  const CudaAttention selected = selected_cuda_attention();
  MINIDL_CHECK(selected != CudaAttention::Cudnn || cuda::cudnn_attention_built(),
               "MINIDL_CUDA_ATTENTION=cudnn: this build of minidl has no cuDNN attention: it was "
               "configured without the cuDNN frontend's headers (run "
               "tools/fetch_cudnn_frontend.sh, then configure again)");
  return selected;
}

// AttentionKernels::kCuda: the implementation MINIDL_CUDA_ATTENTION selects where the problem
// fits, else the CUDA-core kernels above; unset (Auto), the fastest that fits, as the H100 ranked
// them on GPT-2 small in bf16 (docs/benchmarks.md): cuDNN, the tensor cores, the CUDA cores.
void attention_forward(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                       const Tensor& key, const Tensor& value, const Tensor& mask,
                       const AttentionParams& params) {
  switch (selected_implementation()) {
    case CudaAttention::Auto:
      if (cuda::cudnn_attention_fits_automatically(params, {&query, &key, &value, &out, &logsumexp},
                                                   AttentionPass::Forward))
        return attention_forward_cudnn(out, logsumexp, query, key, value, mask, params);
      if (cuda::tensor_core_attention_fits(params, {&query, &key, &value, &out}))
        return attention_forward_tensor_cores(out, logsumexp, query, key, value, mask, params);
      break;
    case CudaAttention::TensorCores:
      if (cuda::tensor_core_attention_fits(params, {&query, &key, &value, &out}))
        return attention_forward_tensor_cores(out, logsumexp, query, key, value, mask, params);
      break;
    case CudaAttention::Cudnn:
      if (cuda::cudnn_attention_fits(params, {&query, &key, &value, &out, &logsumexp},
                                     AttentionPass::Forward))
        return attention_forward_cudnn(out, logsumexp, query, key, value, mask, params);
      break;
    case CudaAttention::CudaCores: break;
  }
  cuda_core_forward(out, logsumexp, query, key, value, mask, params);
}

void attention_backward(const Tensor& grad_query, const Tensor& grad_key, const Tensor& grad_value,
                        const Tensor& grad_out, const Tensor& query, const Tensor& key,
                        const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                        const Tensor& mask, const AttentionParams& params) {
  const auto fits_tensor_cores = [&] {
    return cuda::tensor_core_attention_fits(
        params, {&query, &key, &value, &out, &grad_out, &grad_query, &grad_key, &grad_value});
  };
  switch (selected_implementation()) {
    case CudaAttention::Auto:
      if (cuda::cudnn_attention_fits_automatically(
              params,
              {&query, &key, &value, &out, &grad_out, &logsumexp, &grad_query, &grad_key,
               &grad_value},
              AttentionPass::Backward))
        return attention_backward_cudnn(grad_query, grad_key, grad_value, grad_out, query, key,
                                        value, out, logsumexp, mask, params);
      if (fits_tensor_cores())
        return attention_backward_tensor_cores(grad_query, grad_key, grad_value, grad_out, query,
                                               key, value, out, logsumexp, mask, params);
      break;
    case CudaAttention::TensorCores:
      if (fits_tensor_cores())
        return attention_backward_tensor_cores(grad_query, grad_key, grad_value, grad_out, query,
                                               key, value, out, logsumexp, mask, params);
      break;
    case CudaAttention::Cudnn:
      if (cuda::cudnn_attention_fits(params,
                                     {&query, &key, &value, &out, &grad_out, &logsumexp,
                                      &grad_query, &grad_key, &grad_value},
                                     AttentionPass::Backward))
        return attention_backward_cudnn(grad_query, grad_key, grad_value, grad_out, query, key,
                                        value, out, logsumexp, mask, params);
      break;
    case CudaAttention::CudaCores: break;
  }
  cuda_core_backward(grad_query, grad_key, grad_value, grad_out, query, key, value, out, logsumexp,
                     mask, params);
}

}  // namespace

const AttentionKernels& cuda_core_attention_kernels() {
  static const AttentionKernels kernels{.forward = cuda_core_forward,
                                        .backward = cuda_core_backward};
  return kernels;
}

}  // namespace minidl::cuda

namespace minidl {

const AttentionKernels AttentionKernels::kCuda{.forward = cuda::attention_forward,
                                               .backward = cuda::attention_backward};

}  // namespace minidl
