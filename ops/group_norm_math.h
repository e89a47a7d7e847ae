#pragma once
// The geometry of group normalisation, written once for the CPU loops (ops/cpu/group_norm.cpp)
// and the CUDA kernels (ops/cuda/group_norm.cu); the per-element math is layer norm's
// (ops/layer_norm_math.h): each (sample, group) is a row normalised on its own.
//
// Conventions:
// - The input is a dense [N, C, *] tensor; S = the product of *, 1 for [N, C]. Its (sample n,
//   group g) row is the C / G * S consecutive values from (n * C + g * C / G) * S: row n * G + g.
// - Forward:  x_hat = (x - mean) * rstd over a row;  y = x_hat * weight[c] + bias[c].
// - Backward, with g = dy * weight[c] over a row: grad_input by layer_norm_math::input_grad;
//   grad_weight[c] = sum over n and * of dy * x_hat, grad_bias[c] = sum over n and * of dy.
#include <cstdint>

#include "minidl/core/macros.h"
#include "minidl/ops/layer_norm_math.h"

namespace minidl::group_norm_math {

struct GroupLayout {
  int64_t samples;   // N
  int64_t channels;  // C
  int64_t groups;    // G, dividing C
  int64_t spatial;   // S

  MINIDL_HOST_DEVICE int64_t channels_per_group() const { return channels / groups; }
  // The rows of layer norm's view: one mean and rstd each.
  MINIDL_HOST_DEVICE layer_norm_math::RowLayout rows() const {
    return {samples * groups, channels_per_group() * spatial};
  }
  MINIDL_HOST_DEVICE int64_t numel() const { return samples * channels * spatial; }
  // The channel of element j of row `row`.
  MINIDL_HOST_DEVICE int64_t channel_of(int64_t row, int64_t j) const {
    return (row % groups) * channels_per_group() + j / spatial;
  }
  // The row holding channel c of sample n.
  MINIDL_HOST_DEVICE int64_t row_of(int64_t n, int64_t c) const {
    return n * groups + c / channels_per_group();
  }
};

// Which weight and bias element group norm gives element j of a row: its channel's.
struct ChannelParameter {
  GroupLayout layout;
  MINIDL_HOST_DEVICE int64_t operator()(int64_t row, int64_t j) const {
    return layout.channel_of(row, j);
  }
};

}  // namespace minidl::group_norm_math
