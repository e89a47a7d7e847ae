#pragma once
// Scaled dot-product attention on tensor cores for float16 and bfloat16: FlashAttention-2's
// forward and backward (Note [Blocked attention] in ops/attention_math.h) with the matrix
// products on WMMA fragments (16 x 16 x 16, float accumulators) and the masking, online softmax
// and score gradients of ops/attention_math.h in float, as the CUDA-core kernels of
// ops/cuda/attention.cu. Dropout, float32 and other head dims stay on those kernels.
//
// Conventions (see also ops/attention_kernels.h and ops/cuda/attention_tensor_cores.h):
// - Blocks are kWarps warps. Tiles are 64 queries by 64 keys; warp w owns rows 16w .. 16w + 15
//   of every per-block matrix it writes (queries in the forward and dQ kernels, keys in the dK,
//   dV kernel), so between the shared tiles' loads (__syncthreads) a warp only waits for itself
//   (__syncwarp).
// - Shared tiles: the inputs' rows in the input dtype, padded by kHalfPad elements; scores and
//   the like in float, padded by kFloatPad. WMMA wants a leading dimension that is a multiple of
//   16 bytes and fragment pointers 32-byte aligned, which both paddings keep (every row offset of
//   a 16-row fragment is a multiple of 32 bytes, every section starts on 128 bytes); the padding
//   also staggers rows across the banks.
// - forward: one block per (64 queries, b * H + h), looping over the 64-key tiles a causal
//   problem's queries can see. Overwrites out and logsumexp.
// - backward: delta = rowsum(dO * O) (one warp per row), then dK, dV (one block per 64 keys,
//   looping over query tiles in order) and dQ (one block per 64 queries, looping over key tiles
//   in order). No atomics: every element is summed in a fixed order, so results repeat bit for
//   bit. P and dS are rounded to the input dtype for the tensor-core products, as FlashAttention
//   does.
//
// Device code (and tile_problem) only, included by ops/cuda/attention_tensor_cores.cu, whose
// launchers run it. tests/ops/attention_tensor_cores_emulation_test.cpp compiles it on the host
// too, with WMMA, shuffles and thread blocks emulated (tests/ops/wmma_host_emulation.h, which
// defines MINIDL_WMMA_HOST_EMULATION to leave the CUDA headers out), so that the CPU tests run
// this very code against the CPU kernels.
#ifndef MINIDL_WMMA_HOST_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "minidl/core/cuda/block_reduce.cuh"
#endif

#include <cstdint>

#include "minidl/core/half.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/attention_math.h"

namespace minidl::cuda::attention_tensor_cores {
#ifdef MINIDL_WMMA_HOST_EMULATION
inline namespace host_emulation {  // other symbols than the CUDA build's
#endif

namespace wmma = nvcuda::wmma;

using Acc = float;

constexpr int kFragment = 16;  // WMMA's 16 x 16 x 16 shape
constexpr int kQueries = 64;   // queries per tile
constexpr int kKeys = 64;      // keys per tile
constexpr int kWarps = 4;      // each owns 16 rows of a 64-row tile
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kMaxDim = 128;
constexpr int kHalfPad = 8;   // elements: 16 bytes
constexpr int kFloatPad = 4;  // elements: 16 bytes
static_assert(kQueries == kWarps * kFragment && kKeys == kWarps * kFragment);

// minidl's Half and BFloat16 hold the same 16 bits as CUDA's __half and __nv_bfloat16, the
// element types WMMA takes.
template <class T>
struct WmmaElement;
template <>
struct WmmaElement<Half> {
  using type = __half;
};
template <>
struct WmmaElement<BFloat16> {
  using type = __nv_bfloat16;
};
template <class T>
using Element = typename WmmaElement<T>::type;

template <class T>
using MatrixA =
    wmma::fragment<wmma::matrix_a, kFragment, kFragment, kFragment, Element<T>, wmma::row_major>;
// B read from a row-major [k, n] tile, or (MatrixBTransposed) from a row-major [n, k] tile: the
// transpose of what it holds.
template <class T>
using MatrixB =
    wmma::fragment<wmma::matrix_b, kFragment, kFragment, kFragment, Element<T>, wmma::row_major>;
template <class T>
using MatrixBTransposed =
    wmma::fragment<wmma::matrix_b, kFragment, kFragment, kFragment, Element<T>, wmma::col_major>;
using Accumulator = wmma::fragment<wmma::accumulator, kFragment, kFragment, kFragment, Acc>;

template <class T>
__device__ const Element<T>* as_element(const T* p) {
  return reinterpret_cast<const Element<T>*>(p);
}

// What the kernels need of AttentionParams, as a plain struct for the launch.
template <class T>
struct TileProblem {
  const T* query;  // [BH, T, D]
  const T* key;    // [BH, S, D]
  const T* value;  // [BH, S, Dv]
  const bool* boolean_mask;
  const T* additive_mask;
  int64_t mask_strides[4];
  int64_t heads, query_length, key_length;
  int head_dim, value_dim;
  Acc scale;
  bool is_causal;

  // The end of the keys any of queries [.., last_query] can see.
  __device__ int64_t visible_keys(int64_t last_query) const {
    return is_causal ? (key_length < last_query + 1 ? key_length : last_query + 1) : key_length;
  }

  // The scaled, masked score of query i and key j; -inf for the tiles' rows past T or S (their
  // mask entries do not exist).
  __device__ Acc score(int64_t bh, int64_t i, int64_t j, Acc q_dot_k) const {
    if (i >= query_length || j >= key_length) return -attention::infinity<Acc>();
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
};

template <class T>
TileProblem<T> tile_problem(const AttentionParams& params, const Tensor& query, const Tensor& key,
                            const Tensor& value, const Tensor& mask) {
  TileProblem<T> problem{};
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
  problem.is_causal = params.is_causal;
  return problem;
}

// Byte offsets of a kernel's shared sections, each on a 128-byte boundary; computed alike on
// the host (the launch's size) and the device (the carving).
struct SharedLayout {
  size_t bytes = 0;
  MINIDL_HOST_DEVICE size_t take(size_t size) {
    const size_t at = bytes;
    bytes += (size + 127) / 128 * 128;
    return at;
  }
};

// Row strides of the shared tiles, in elements.
struct Strides {
  int query, value, score, probability, output;
  MINIDL_HOST_DEVICE Strides(int head_dim, int value_dim)
      : query(head_dim + kHalfPad),   // queries and keys
        value(value_dim + kHalfPad),  // values and output gradients
        score(kKeys + kFloatPad),
        probability(kKeys + kHalfPad),
        output(value_dim + kFloatPad) {}
};

// The forward kernel's shared sections.
struct ForwardShared {
  size_t queries, keys, values, scores, probabilities, outputs, bytes;
  MINIDL_HOST_DEVICE ForwardShared(int head_dim, int value_dim) {
    const Strides stride(head_dim, value_dim);
    SharedLayout layout;
    queries = layout.take(sizeof(uint16_t) * kQueries * stride.query);  // [64, D + pad]
    keys = layout.take(sizeof(uint16_t) * kKeys * stride.query);        // [64, D + pad]
    values = layout.take(sizeof(uint16_t) * kKeys * stride.value);      // [64, Dv + pad]
    scores = layout.take(sizeof(Acc) * kQueries * stride.score);        // [64, 64 + pad]
    probabilities = layout.take(sizeof(uint16_t) * kQueries * stride.probability);
    outputs = layout.take(sizeof(Acc) * kQueries * stride.output);  // [64, Dv + pad]
    bytes = layout.bytes;
  }
};

// The gradient kernels' shared sections. scores, grad_probabilities, probabilities and
// score_gradients are [64 keys, 64 queries] in the dK, dV kernel and [64 queries, 64 keys] in
// the dQ kernel (the row index is the warp's).
struct BackwardShared {
  size_t queries, grad_outs, keys, values, scores, grad_probabilities, probabilities,
      score_gradients, row_logsumexp, row_delta, bytes;
  MINIDL_HOST_DEVICE BackwardShared(int head_dim, int value_dim) {
    const Strides stride(head_dim, value_dim);
    SharedLayout layout;
    queries = layout.take(sizeof(uint16_t) * kQueries * stride.query);
    grad_outs = layout.take(sizeof(uint16_t) * kQueries * stride.value);
    keys = layout.take(sizeof(uint16_t) * kKeys * stride.query);
    values = layout.take(sizeof(uint16_t) * kKeys * stride.value);
    scores = layout.take(sizeof(Acc) * kKeys * stride.score);
    grad_probabilities = layout.take(sizeof(Acc) * kKeys * stride.score);
    probabilities = layout.take(sizeof(uint16_t) * kKeys * stride.probability);
    score_gradients = layout.take(sizeof(uint16_t) * kKeys * stride.probability);
    row_logsumexp = layout.take(sizeof(Acc) * kQueries);
    row_delta = layout.take(sizeof(Acc) * kQueries);
    bytes = layout.bytes;
  }
};

template <class E>
__device__ E* section(unsigned char* shared, size_t offset) {
  return reinterpret_cast<E*>(shared + offset);
}

// Rows [first, first + count) of a [.., width] tensor into a shared tile of tile_rows rows of
// stride width + kHalfPad, 16 bytes per load; rows past count become 0 (so that padded keys
// and queries add nothing to any product). All threads of the block call it.
template <class T>
__device__ void stage_tile(T* tile, const T* rows, int64_t first, int64_t count, int tile_rows,
                           int width) {
  constexpr int kPerVector = static_cast<int>(sizeof(uint4) / sizeof(T));
  const int vectors_per_row = width / kPerVector;
  const int stride = width + kHalfPad;
  for (int e = static_cast<int>(threadIdx.x); e < tile_rows * vectors_per_row; e += kThreads) {
    const int r = e / vectors_per_row, c = e % vectors_per_row * kPerVector;
    uint4 chunk = make_uint4(0u, 0u, 0u, 0u);
    if (r < count) chunk = *reinterpret_cast<const uint4*>(rows + (first + r) * width + c);
    *reinterpret_cast<uint4*>(tile + r * stride + c) = chunk;
  }
}

// product[16, 64] (float, row stride product_stride) = A[16, depth] B^T for the warp's 16 rows
// of a (row-major [.., a_stride]) and the 64 rows of b (row-major [64, b_stride]): Q K^T, K Q^T,
// dO V^T or V dO^T. The four accumulators share each A fragment.
template <class T>
__device__ void multiply_transposed(Acc* product, int product_stride, const T* a, int a_stride,
                                    const T* b, int b_stride, int depth) {
  constexpr int kColumnTiles = kKeys / kFragment;
  Accumulator accumulators[kColumnTiles];
#pragma unroll
  for (int n = 0; n < kColumnTiles; ++n) wmma::fill_fragment(accumulators[n], Acc(0));
  for (int k = 0; k < depth; k += kFragment) {
    MatrixA<T> a_fragment;
    wmma::load_matrix_sync(a_fragment, as_element(a + k), static_cast<unsigned>(a_stride));
#pragma unroll
    for (int n = 0; n < kColumnTiles; ++n) {
      MatrixBTransposed<T> b_fragment;
      wmma::load_matrix_sync(b_fragment, as_element(b + n * kFragment * b_stride + k),
                             static_cast<unsigned>(b_stride));
      wmma::mma_sync(accumulators[n], a_fragment, b_fragment, accumulators[n]);
    }
  }
#pragma unroll
  for (int n = 0; n < kColumnTiles; ++n)
    wmma::store_matrix_sync(product + n * kFragment, accumulators[n],
                            static_cast<unsigned>(product_stride), wmma::mem_row_major);
}

// accumulator += A[16, 64] B[64, 16]: the warp's 16 rows of a 64-wide 16-bit tile a times
// columns [column, column + 16) of a row-major [64, b_stride] tile b: P V, P^T dO, dS^T Q, dS K.
template <class T>
__device__ void accumulate_product(Accumulator& accumulator, const T* a, int a_stride, const T* b,
                                   int b_stride, int column) {
#pragma unroll
  for (int k = 0; k < kKeys; k += kFragment) {
    MatrixA<T> a_fragment;
    MatrixB<T> b_fragment;
    wmma::load_matrix_sync(a_fragment, as_element(a + k), static_cast<unsigned>(a_stride));
    wmma::load_matrix_sync(b_fragment, as_element(b + k * b_stride + column),
                           static_cast<unsigned>(b_stride));
    wmma::mma_sync(accumulator, a_fragment, b_fragment, accumulator);
  }
}

// Writes a warp's [16, width] result held in accumulators (column tile n in accumulators[n])
// to rows [first_row, first_row + 16) of a [.., width] tensor, rows at or past `rows` left
// out, through the warp's [16, 16] float staging area (an accumulator's element positions are
// opaque, so only a store to memory can tell them).
template <class T, int kDimTiles>
__device__ void write_rows(T* destination, int64_t first_row, int64_t rows, int width,
                           const Accumulator (&accumulators)[kDimTiles], Acc* staging,
                           int staging_stride) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) {
    if (n * kFragment >= width) break;
    __syncwarp();  // the previous tile's readers are done
    wmma::store_matrix_sync(staging, accumulators[n], static_cast<unsigned>(staging_stride),
                            wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < kFragment * kFragment; e += kWarpSize) {
      const int r = e / kFragment, c = e % kFragment;
      if (first_row + r < rows)
        destination[(first_row + r) * width + n * kFragment + c] =
            static_cast<T>(staging[r * staging_stride + c]);
    }
  }
}

// ---- kernels ----

// grid (ceil(T / 64), B * H), kThreads threads, dynamic shared ForwardShared::bytes.
// out: [BH, T, Dv], logsumexp: [BH, T].
//
// The output accumulator stays in shared memory as float, not in accumulator fragments: the
// online softmax rescales it by a per-row factor every tile, and which rows a fragment's
// elements belong to is opaque in WMMA, so the rescale needs a trip through shared memory
// anyway; keeping O there makes that trip one load and one store per tile and frees the
// registers the fragments would pin (Dv / 16 of them per warp).
template <class T>
__global__ void __launch_bounds__(kThreads)
    attention_forward_tensor_core_kernel(TileProblem<T> problem, T* out, Acc* logsumexp) {
  extern __shared__ __align__(128) unsigned char tensor_core_shared[];
  const int D = problem.head_dim, Dv = problem.value_dim;
  const ForwardShared layout(D, Dv);
  const Strides stride(D, Dv);
  T* queries = section<T>(tensor_core_shared, layout.queries);
  T* keys = section<T>(tensor_core_shared, layout.keys);
  T* values = section<T>(tensor_core_shared, layout.values);
  Acc* scores = section<Acc>(tensor_core_shared, layout.scores);
  T* probabilities = section<T>(tensor_core_shared, layout.probabilities);
  Acc* outputs = section<Acc>(tensor_core_shared, layout.outputs);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t bh = blockIdx.y;
  const int64_t T_length = problem.query_length, S_length = problem.key_length;
  const int64_t first_query = static_cast<int64_t>(blockIdx.x) * kQueries;
  const int64_t query_count = min(static_cast<int64_t>(kQueries), T_length - first_query);

  stage_tile(queries, problem.query + bh * T_length * D, first_query, query_count, kQueries, D);
  for (int e = static_cast<int>(threadIdx.x); e < kQueries * stride.output; e += kThreads)
    outputs[e] = Acc(0);

  // Lanes 2r and 2r + 1 keep the online softmax of the warp's row r (the same in both), each
  // over every other key and output column of it.
  const int row = warp * kFragment + lane / 2, parity = lane % 2;
  const int64_t i = first_query + row;
  Acc* score_row = scores + row * stride.score;
  T* probability_row = probabilities + row * stride.probability;
  Acc* output_row = outputs + row * stride.output;
  attention::OnlineSoftmax<Acc> softmax;

  const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
  for (int64_t first_key = 0; first_key < key_end; first_key += kKeys) {
    const int64_t key_count = min(static_cast<int64_t>(kKeys), key_end - first_key);
    __syncthreads();  // the previous tile's readers are done
    stage_tile(keys, problem.key + bh * S_length * D, first_key, key_count, kKeys, D);
    stage_tile(values, problem.value + bh * S_length * Dv, first_key, key_count, kKeys, Dv);
    __syncthreads();
    multiply_transposed(scores + warp * kFragment * stride.score, stride.score,
                        queries + warp * kFragment * stride.query, stride.query, keys, stride.query,
                        D);
    __syncwarp();
    Acc block_max = -attention::infinity<Acc>();
    for (int c = parity; c < kKeys; c += 2) {
      const Acc score = problem.score(bh, i, first_key + c, score_row[c]);
      score_row[c] = score;
      block_max = max(block_max, score);
    }
    block_max = max(block_max, __shfl_xor_sync(0xffffffffu, block_max, 1));
    const Acc factor = softmax.raise_max(block_max);
    Acc block_sum = 0;
    for (int c = parity; c < kKeys; c += 2) {
      const Acc weight = softmax.weight(score_row[c]);
      block_sum += weight;
      probability_row[c] = static_cast<T>(weight);
    }
    softmax.sum += block_sum + __shfl_xor_sync(0xffffffffu, block_sum, 1);
    for (int c = parity; c < Dv; c += 2) output_row[c] *= factor;
    __syncwarp();
    for (int n = 0; n < Dv; n += kFragment) {
      Accumulator accumulator;
      Acc* output_tile = outputs + warp * kFragment * stride.output + n;
      wmma::load_matrix_sync(accumulator, output_tile, static_cast<unsigned>(stride.output),
                             wmma::mem_row_major);
      accumulate_product(accumulator, probabilities + warp * kFragment * stride.probability,
                         stride.probability, values, stride.value, n);
      wmma::store_matrix_sync(output_tile, accumulator, static_cast<unsigned>(stride.output),
                              wmma::mem_row_major);
    }
  }
  __syncwarp();
  const Acc inverse_sum = softmax.inverse_sum();
  for (int c = parity; c < Dv; c += 2) output_row[c] *= inverse_sum;
  if (parity == 0 && i < T_length) logsumexp[bh * T_length + i] = softmax.logsumexp();
  __syncwarp();
  // The warp's 16 rows, consecutive lanes on consecutive elements.
  for (int e = lane; e < kFragment * Dv; e += kWarpSize) {
    const int r = e / Dv, c = e % Dv;
    const int64_t query = first_query + warp * kFragment + r;
    if (query < T_length)
      out[(bh * T_length + query) * Dv + c] =
          static_cast<T>(outputs[(warp * kFragment + r) * stride.output + c]);
  }
}

// grid-stride over the BH * T rows, one warp each. delta: [BH * T].
template <class T>
__global__ void attention_delta_tensor_core_kernel(const T* grad_out, const T* out, Acc* delta,
                                                   int64_t rows, int value_dim) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarpSize;
       row < rows; row += warps) {
    Acc sum = 0;
    for (int e = lane; e < value_dim; e += kWarpSize)
      sum += static_cast<Acc>(grad_out[row * value_dim + e]) *
             static_cast<Acc>(out[row * value_dim + e]);
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) delta[row] = sum;
  }
}

// The per-row logsumexp and delta of query tile [first_query, first_query + 64) into shared;
// rows past T get +inf and 0, which make their probabilities and gradients 0.
inline __device__ void stage_row_statistics(Acc* row_logsumexp, Acc* row_delta,
                                            const Acc* logsumexp, const Acc* delta, int64_t bh,
                                            int64_t query_length, int64_t first_query) {
  for (int r = static_cast<int>(threadIdx.x); r < kQueries; r += kThreads) {
    const int64_t i = first_query + r;
    const bool inside = i < query_length;
    row_logsumexp[r] = inside ? logsumexp[bh * query_length + i] : attention::infinity<Acc>();
    row_delta[r] = inside ? delta[bh * query_length + i] : Acc(0);
  }
}

// dScore * scale of one entry from its raw q . k and dP, and P itself; both 0 where masked.
template <class T>
__device__ void score_gradient(const TileProblem<T>& problem, int64_t bh, int64_t i, int64_t j,
                               Acc q_dot_k, Acc grad_probability, Acc row_logsumexp, Acc row_delta,
                               Acc& probability, Acc& gradient) {
  probability = attention::probability(problem.score(bh, i, j, q_dot_k), row_logsumexp);
  gradient =
      probability != Acc(0)
          ? attention::score_gradient(probability, grad_probability, row_delta) * problem.scale
          : Acc(0);
}

// grid (ceil(S / 64), B * H), kThreads threads, dynamic shared BackwardShared::bytes;
// kDimTiles >= max(D, Dv) / 16. grad_key [BH, S, D], grad_value [BH, S, Dv].
template <class T, int kDimTiles>
__global__ void __launch_bounds__(kThreads)
    attention_key_value_gradient_tensor_core_kernel(TileProblem<T> problem, const T* grad_out,
                                                    const Acc* logsumexp, const Acc* delta,
                                                    T* grad_key, T* grad_value) {
  extern __shared__ __align__(128) unsigned char tensor_core_shared[];
  const int D = problem.head_dim, Dv = problem.value_dim;
  const BackwardShared layout(D, Dv);
  const Strides stride(D, Dv);
  T* queries = section<T>(tensor_core_shared, layout.queries);
  T* grad_outs = section<T>(tensor_core_shared, layout.grad_outs);
  T* keys = section<T>(tensor_core_shared, layout.keys);
  T* values = section<T>(tensor_core_shared, layout.values);
  Acc* scores = section<Acc>(tensor_core_shared, layout.scores);  // [key, query]
  Acc* grad_probabilities = section<Acc>(tensor_core_shared, layout.grad_probabilities);
  T* probabilities = section<T>(tensor_core_shared, layout.probabilities);
  T* score_gradients = section<T>(tensor_core_shared, layout.score_gradients);
  Acc* row_logsumexp = section<Acc>(tensor_core_shared, layout.row_logsumexp);
  Acc* row_delta = section<Acc>(tensor_core_shared, layout.row_delta);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t bh = blockIdx.y;
  const int64_t T_length = problem.query_length, S_length = problem.key_length;
  const int64_t first_key = static_cast<int64_t>(blockIdx.x) * kKeys;
  const int64_t key_count = min(static_cast<int64_t>(kKeys), S_length - first_key);
  const int warp_row = warp * kFragment;  // the warp's first key in the tile

  stage_tile(keys, problem.key + bh * S_length * D, first_key, key_count, kKeys, D);
  stage_tile(values, problem.value + bh * S_length * Dv, first_key, key_count, kKeys, Dv);
  Accumulator grad_keys[kDimTiles], grad_values[kDimTiles];
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) {
    wmma::fill_fragment(grad_keys[n], Acc(0));
    wmma::fill_fragment(grad_values[n], Acc(0));
  }

  // Under is_causal, queries before first_key see none of these keys.
  const int64_t query_start =
      problem.is_causal ? min(T_length, first_key) / kQueries * kQueries : 0;
  for (int64_t first_query = query_start; first_query < T_length; first_query += kQueries) {
    const int64_t query_count = min(static_cast<int64_t>(kQueries), T_length - first_query);
    __syncthreads();  // the previous tile's readers are done
    stage_tile(queries, problem.query + bh * T_length * D, first_query, query_count, kQueries, D);
    stage_tile(grad_outs, grad_out + bh * T_length * Dv, first_query, query_count, kQueries, Dv);
    stage_row_statistics(row_logsumexp, row_delta, logsumexp, delta, bh, T_length, first_query);
    __syncthreads();
    // S^T = K Q^T and dP^T = V dO^T for the warp's 16 keys.
    multiply_transposed(scores + warp_row * stride.score, stride.score,
                        keys + warp_row * stride.query, stride.query, queries, stride.query, D);
    multiply_transposed(grad_probabilities + warp_row * stride.score, stride.score,
                        values + warp_row * stride.value, stride.value, grad_outs, stride.value,
                        Dv);
    __syncwarp();
    for (int e = lane; e < kFragment * kQueries; e += kWarpSize) {
      const int r = warp_row + e / kQueries, c = e % kQueries;  // key r, query c
      Acc probability, gradient;
      score_gradient(problem, bh, first_query + c, first_key + r, scores[r * stride.score + c],
                     grad_probabilities[r * stride.score + c], row_logsumexp[c], row_delta[c],
                     probability, gradient);
      probabilities[r * stride.probability + c] = static_cast<T>(probability);
      score_gradients[r * stride.probability + c] = static_cast<T>(gradient);
    }
    __syncwarp();
    // dV += P^T dO and dK += dS^T Q (the scale is in dS), the warp's 16 keys.
#pragma unroll
    for (int n = 0; n < kDimTiles; ++n) {
      if (n * kFragment < Dv)
        accumulate_product(grad_values[n], probabilities + warp_row * stride.probability,
                           stride.probability, grad_outs, stride.value, n * kFragment);
      if (n * kFragment < D)
        accumulate_product(grad_keys[n], score_gradients + warp_row * stride.probability,
                           stride.probability, queries, stride.query, n * kFragment);
    }
  }
  // The warp's rows of scores are its own: a staging area for the results.
  Acc* staging = scores + warp_row * stride.score;
  const int64_t warp_first_key = first_key + warp_row;
  write_rows(grad_key + bh * S_length * D, warp_first_key, S_length, D, grad_keys, staging,
             stride.score);
  write_rows(grad_value + bh * S_length * Dv, warp_first_key, S_length, Dv, grad_values, staging,
             stride.score);
}

// grid (ceil(T / 64), B * H), kThreads threads, dynamic shared BackwardShared::bytes;
// kDimTiles >= D / 16. grad_query [BH, T, D].
template <class T, int kDimTiles>
__global__ void __launch_bounds__(kThreads)
    attention_query_gradient_tensor_core_kernel(TileProblem<T> problem, const T* grad_out,
                                                const Acc* logsumexp, const Acc* delta,
                                                T* grad_query) {
  extern __shared__ __align__(128) unsigned char tensor_core_shared[];
  const int D = problem.head_dim, Dv = problem.value_dim;
  const BackwardShared layout(D, Dv);
  const Strides stride(D, Dv);
  T* queries = section<T>(tensor_core_shared, layout.queries);
  T* grad_outs = section<T>(tensor_core_shared, layout.grad_outs);
  T* keys = section<T>(tensor_core_shared, layout.keys);
  T* values = section<T>(tensor_core_shared, layout.values);
  Acc* scores = section<Acc>(tensor_core_shared, layout.scores);  // [query, key]
  Acc* grad_probabilities = section<Acc>(tensor_core_shared, layout.grad_probabilities);
  T* score_gradients = section<T>(tensor_core_shared, layout.score_gradients);
  Acc* row_logsumexp = section<Acc>(tensor_core_shared, layout.row_logsumexp);
  Acc* row_delta = section<Acc>(tensor_core_shared, layout.row_delta);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t bh = blockIdx.y;
  const int64_t T_length = problem.query_length, S_length = problem.key_length;
  const int64_t first_query = static_cast<int64_t>(blockIdx.x) * kQueries;
  const int64_t query_count = min(static_cast<int64_t>(kQueries), T_length - first_query);
  const int warp_row = warp * kFragment;  // the warp's first query in the tile

  stage_tile(queries, problem.query + bh * T_length * D, first_query, query_count, kQueries, D);
  stage_tile(grad_outs, grad_out + bh * T_length * Dv, first_query, query_count, kQueries, Dv);
  stage_row_statistics(row_logsumexp, row_delta, logsumexp, delta, bh, T_length, first_query);
  Accumulator grad_queries[kDimTiles];
#pragma unroll
  for (int n = 0; n < kDimTiles; ++n) wmma::fill_fragment(grad_queries[n], Acc(0));

  const int64_t key_end = problem.visible_keys(first_query + query_count - 1);
  for (int64_t first_key = 0; first_key < key_end; first_key += kKeys) {
    const int64_t key_count = min(static_cast<int64_t>(kKeys), key_end - first_key);
    __syncthreads();  // the previous tile's readers are done
    stage_tile(keys, problem.key + bh * S_length * D, first_key, key_count, kKeys, D);
    stage_tile(values, problem.value + bh * S_length * Dv, first_key, key_count, kKeys, Dv);
    __syncthreads();
    // S = Q K^T and dP = dO V^T for the warp's 16 queries.
    multiply_transposed(scores + warp_row * stride.score, stride.score,
                        queries + warp_row * stride.query, stride.query, keys, stride.query, D);
    multiply_transposed(grad_probabilities + warp_row * stride.score, stride.score,
                        grad_outs + warp_row * stride.value, stride.value, values, stride.value,
                        Dv);
    __syncwarp();
    for (int e = lane; e < kFragment * kKeys; e += kWarpSize) {
      const int r = warp_row + e / kKeys, c = e % kKeys;  // query r, key c
      Acc probability, gradient;
      score_gradient(problem, bh, first_query + r, first_key + c, scores[r * stride.score + c],
                     grad_probabilities[r * stride.score + c], row_logsumexp[r], row_delta[r],
                     probability, gradient);
      score_gradients[r * stride.probability + c] = static_cast<T>(gradient);
    }
    __syncwarp();
    // dQ += dS K (the scale is in dS), the warp's 16 queries.
#pragma unroll
    for (int n = 0; n < kDimTiles; ++n)
      if (n * kFragment < D)
        accumulate_product(grad_queries[n], score_gradients + warp_row * stride.probability,
                           stride.probability, keys, stride.query, n * kFragment);
  }
  write_rows(grad_query + bh * T_length * D, first_query + warp_row, T_length, D, grad_queries,
             scores + warp_row * stride.score, stride.score);
}

#ifdef MINIDL_WMMA_HOST_EMULATION
}  // namespace host_emulation
#endif
}  // namespace minidl::cuda::attention_tensor_cores
