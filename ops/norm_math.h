#pragma once
// The math of batch normalisation, written once for the CPU loops (ops/cpu/norm.cpp) and the
// CUDA kernels (ops/cuda/norm.cu).
//
// Conventions:
// - The input is seen as [N, C, S] (S = H * W, or L, or 1) and is dense in one of two layouts
//   (ChannelLayout): channels outside the spatial dims (NCHW, and [N, C, L]) or innermost
//   (channels-last NHWC, and [N, C], where each row holds the C channels side by side).
// - Acc is float for float32 and the 16-bit inputs, double for float64: statistics, per-channel
//   parameters and gradient sums are all kept in Acc.
// - Batch statistics come from reduce_math::MomentsOp (shifted sums, merged with Chan et al.'s
//   formula), as var() uses.
// - Forward:  y = (x - mean) * invstd * weight + bias, invstd = 1 / sqrt(var + eps), with the
//   biased variance of the batch in training and the running statistics in evaluation.
// - Backward, with M = N * S values per channel, sum_dy = sum(dy), sum_dy_xmu = sum(dy * (x -
//   mean)) over a channel:
//     grad_bias = sum_dy, grad_weight = sum_dy_xmu * invstd,
//     grad_input = weight * invstd * (dy - sum_dy / M - (x - mean) * invstd^2 * sum_dy_xmu / M)
//   with batch statistics (the standard fused formula), and weight * invstd * dy with running
//   statistics (which do not depend on the input).
// - batch_norm_relu (relu(y + residual)) runs its epilogue in the normalisation's pass
//   (add_rounded, relu_rounded), and its backward reads relu's mask with the gradient
//   (relu_passed).
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "minidl/core/macros.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::norm {

// Where element (n, c, s) of the [N, C, S] view lives, in elements from the data pointer.
struct ChannelLayout {
  int64_t batch, channels, spatial;
  int64_t stride_n, stride_c, stride_s;

  MINIDL_HOST_DEVICE int64_t at(int64_t n, int64_t c, int64_t s) const {
    return n * stride_n + c * stride_c + s * stride_s;
  }
  // Values per channel.
  MINIDL_HOST_DEVICE int64_t count() const { return batch * spatial; }
  MINIDL_HOST_DEVICE int64_t numel() const { return batch * channels * spatial; }
  // Channels innermost: element i of memory belongs to channel i % C.
  MINIDL_HOST_DEVICE bool channels_inner() const { return stride_c == 1; }
  // The channel of memory element i (the tensor is dense in this layout).
  MINIDL_HOST_DEVICE int64_t channel_of(int64_t i) const {
    return channels_inner() ? i % channels : (i / spatial) % channels;
  }
  // Whether `width` elements from any multiple of `width` keep to one channel (channels outside
  // the spatial dims) or to `width` consecutive channels of one row (channels innermost), so a
  // vectorised kernel finds every lane's channel from its first element's (lane_channel).
  MINIDL_HOST_DEVICE bool vectors_fit(int64_t width) const {
    return channels_inner() ? channels % width == 0 : spatial % width == 0;
  }
  // The channel of lane `lane` of a vector whose first element is in `first_channel`.
  MINIDL_HOST_DEVICE int64_t lane_channel(int64_t first_channel, int lane) const {
    return channels_inner() ? first_channel + lane : first_channel;
  }
};

// Which statistics normalised the batch: the batch's own (training) or the running ones.
enum class Statistics { Batch, Running };

template <class Acc>
using Moments = reduce_math::MomentsAcc<Acc>;
template <class Acc>
using MomentsOp = reduce_math::MomentsOp<Acc>;

template <class Acc>
MINIDL_HOST_DEVICE Acc moments_mean(const Moments<Acc>& m) {
  return m.shift + m.sum / static_cast<Acc>(m.count);
}

// 1 / sqrt(variance + eps), both correctly rounded on host and device (sqrt in Acc's precision).
template <class Acc>
MINIDL_HOST_DEVICE Acc inverse_std(Acc variance, Acc eps) {
#if defined(__CUDA_ARCH__)
  return Acc(1) / ::sqrt(variance + eps);  // CUDA's float and double overloads
#else
  return Acc(1) / std::sqrt(variance + eps);
#endif
}

// running <- (1 - momentum) * running + momentum * batch, as PyTorch.
template <class Acc>
MINIDL_HOST_DEVICE Acc running_update(Acc running, Acc batch, Acc momentum) {
  return (Acc(1) - momentum) * running + momentum * batch;
}

// Turns channel c's moments (count >= 2, checked by the op) into mean and invstd, and updates
// the running statistics where they are kept (null pointers: not tracked). The running variance
// takes the unbiased variance (divided by M - 1), normalisation the biased one (M), as PyTorch.
template <class Acc>
MINIDL_HOST_DEVICE void finish_statistics(const Moments<Acc>& m, int64_t c, Acc eps, Acc momentum,
                                          Acc* mean, Acc* invstd, Acc* running_mean,
                                          Acc* running_var) {
  const Acc batch_mean = moments_mean(m);
  const Acc squared_deviations = MomentsOp<Acc>::squared_deviations(m);
  mean[c] = batch_mean;
  invstd[c] = inverse_std(squared_deviations / static_cast<Acc>(m.count), eps);
  if (running_mean) running_mean[c] = running_update(running_mean[c], batch_mean, momentum);
  if (running_var)
    running_var[c] = running_update(running_var[c],
                                    squared_deviations / static_cast<Acc>(m.count - 1), momentum);
}

template <class Acc>
MINIDL_HOST_DEVICE Acc normalize(Acc x, Acc mean, Acc invstd, Acc weight, Acc bias) {
  return (x - mean) * invstd * weight + bias;
}

// batch_norm_relu's steps after the normalisation, on y already rounded to the output's dtype
// T: relu(y + residual) (without a residual, relu(y)), each step rounded to T as add's and relu's
// own kernels round (add computes in Acc, alpha 1), so the fused op has the bits of the ops apart.
template <class Acc, class T>
MINIDL_HOST_DEVICE T add_rounded(T y, T residual) {
  return static_cast<T>(static_cast<Acc>(y) + static_cast<Acc>(residual));
}
template <class Acc, class T>
MINIDL_HOST_DEVICE T relu_rounded(T y) {
  return static_cast<Acc>(y) < Acc(0) ? static_cast<T>(Acc(0)) : y;
}

// relu's backward, read by batch_norm_relu's fused backward from its output: the gradient
// passes where the output is positive (as elementwise's ReluBackward).
template <class Acc>
MINIDL_HOST_DEVICE Acc relu_passed(Acc grad, Acc relu_output) {
#if defined(__CUDA_ARCH__)
  return relu_output > Acc(0) ? grad : Acc(0);
#else
  // Without a branch: the mask goes either way about as often, and the CPU's scalar loops
  // (sums that must keep their order) mispredicted it on half the elements, which made the masked
  // backward 5x slower than the unmasked one. The same +0 for a masked element.
  using Bits = std::conditional_t<sizeof(Acc) == sizeof(uint32_t), uint32_t, uint64_t>;
  const Bits keep = Bits(0) - static_cast<Bits>(relu_output > Acc(0));
  return std::bit_cast<Acc>(std::bit_cast<Bits>(grad) & keep);
#endif
}

// Per-channel sums of backward: sum(dy) and sum(dy * (x - mean)).
template <class Acc>
struct GradSums {
  Acc dy;
  Acc dy_xmu;
};

template <class Acc>
struct GradSumsOp {
  MINIDL_HOST_DEVICE GradSums<Acc> identity() const { return {Acc(0), Acc(0)}; }
  MINIDL_HOST_DEVICE GradSums<Acc> accumulate(GradSums<Acc> acc, Acc dy, Acc x, Acc mean) const {
    acc.dy += dy;
    acc.dy_xmu += dy * (x - mean);
    return acc;
  }
  MINIDL_HOST_DEVICE GradSums<Acc> combine(GradSums<Acc> a, GradSums<Acc> b) const {
    return {a.dy + b.dy, a.dy_xmu + b.dy_xmu};
  }
};

// grad_input of one element (see the formulas at the top). `count` is M.
template <class Acc>
MINIDL_HOST_DEVICE Acc input_grad(Statistics statistics, Acc dy, Acc x, Acc mean, Acc invstd,
                                  Acc weight, Acc sum_dy, Acc sum_dy_xmu, int64_t count) {
  if (statistics == Statistics::Running) return dy * invstd * weight;
  const Acc m = static_cast<Acc>(count);
  const Acc projection = (x - mean) * invstd * invstd * (sum_dy_xmu / m);
  return (dy - sum_dy / m - projection) * invstd * weight;
}

}  // namespace minidl::norm
