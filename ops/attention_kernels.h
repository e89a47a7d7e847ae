#pragma once
// The kernel interface of ops/attention.h, implemented by ops/cpu/attention.cpp and
// ops/cuda/attention.cu; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// Conventions (both backends):
// - query [B, H, T, D], key [B, H, S, D], value [B, H, S, Dv], out and grad_out [B, H, T, Dv]:
//   contiguous, one floating dtype. logsumexp [B, H, T] is contiguous in the accumulation dtype
//   (float32, or float64 for float64 inputs): log sum_j exp(score_ij) over the unmasked keys
//   before dropout, +inf for a row whose every key is masked (its probabilities are then 0).
// - The mask, when AttentionParams::mask is not None, is read at
//   mask[b * strides[0] + h * strides[1] + i * strides[2] + j * strides[3]] (elements; stride
//   0 where it broadcasts): bool for Boolean, the query's dtype for Additive.
// - forward overwrites out and logsumexp. backward overwrites grad_query, grad_key and
//   grad_value (same shapes and dtype as query, key, value); it is deterministic: the same bits
//   at any thread count or launch, since no element is summed by racing threads.
// - CUDA kernels run on the current stream of the tensors' device and never synchronise the
//   host.
#include <array>
#include <cstdint>

#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl {

enum class AttentionMask { None, Boolean, Additive };

// Which half of the op a kernel runs (some implementations take one and not the other).
enum class AttentionPass { Forward, Backward };

struct AttentionParams {
  int64_t batch = 0, heads = 0;
  int64_t query_length = 0, key_length = 0;  // T, S
  int64_t head_dim = 0, value_dim = 0;       // D, Dv
  double scale = 1.0;
  bool is_causal = false;
  AttentionMask mask = AttentionMask::None;
  std::array<int64_t, 4> mask_strides{};  // over (b, h, i, j), in elements
  double dropout_p = 0.0;                 // 0: no dropout
  GeneratorState dropout_start;           // the counters of Note [Attention dropout]
};

struct AttentionKernels {
  void (*forward)(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                  const Tensor& key, const Tensor& value, const Tensor& mask,
                  const AttentionParams& params);
  void (*backward)(const Tensor& grad_query, const Tensor& grad_key, const Tensor& grad_value,
                   const Tensor& grad_out, const Tensor& query, const Tensor& key,
                   const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                   const Tensor& mask, const AttentionParams& params);

  static const AttentionKernels kCpu;
  static const AttentionKernels kCuda;
};

}  // namespace minidl
