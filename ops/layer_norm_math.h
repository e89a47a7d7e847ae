#pragma once
// The math of layer normalisation, written once for the CPU loops (ops/cpu/layer_norm.cpp) and
// the CUDA kernels (ops/cuda/layer_norm.cu).
//
// Conventions:
// - The input is dense and seen as [R, D] (RowLayout): D = the product of normalized_shape (the
//   last dims), R = the product of the dims before them. Each row is normalised on its own.
// - Acc is float for float32 and the 16-bit inputs, double for float64: statistics, weight,
//   bias and every sum are kept in Acc.
// - Statistics take two passes over a row, the sum for the mean and then the sum of squared
//   deviations from it (biased variance, divided by D); both backends merge a row's terms in a
//   fixed order, so each repeats exactly (though the CPU's order is not the GPU's).
// - Forward:  x_hat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps);  y = x_hat * w + b.
// - Backward, with g = dy * w over a row:
//     grad_input = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
//     grad_weight[j] = sum over rows of dy * x_hat,  grad_bias[j] = sum over rows of dy.
#include <cstdint>

#include "minidl/core/macros.h"
#include "minidl/ops/norm_math.h"

namespace minidl::layer_norm_math {

// The [R, D] view of a dense input.
struct RowLayout {
  int64_t rows;  // R: one mean and rstd each
  int64_t cols;  // D: the normalized elements of a row

  MINIDL_HOST_DEVICE int64_t numel() const { return rows * cols; }
};

// Which weight and bias element 1-D layer norm gives element j of a row: the column's. (Group
// norm's rows use another, group_norm_math::ChannelParameter; the row kernels take either.)
struct ColumnParameter {
  MINIDL_HOST_DEVICE int64_t operator()(int64_t /*row*/, int64_t j) const { return j; }
};

template <class Acc>
MINIDL_HOST_DEVICE Acc row_mean(Acc sum, int64_t cols) {
  return sum / static_cast<Acc>(cols);
}

// 1 / sqrt(biased variance + eps) of a row whose squared deviations from its mean sum to
// `squared_deviations`.
template <class Acc>
MINIDL_HOST_DEVICE Acc row_rstd(Acc squared_deviations, int64_t cols, Acc eps) {
  return norm::inverse_std(squared_deviations / static_cast<Acc>(cols), eps);
}

template <class Acc>
MINIDL_HOST_DEVICE Acc squared_deviation(Acc x, Acc mean) {
  const Acc deviation = x - mean;
  return deviation * deviation;
}

template <class Acc>
MINIDL_HOST_DEVICE Acc normalized(Acc x, Acc mean, Acc rstd) {
  return (x - mean) * rstd;
}

template <class Acc>
MINIDL_HOST_DEVICE Acc affine(Acc x_hat, Acc weight, Acc bias) {
  return x_hat * weight + bias;
}

// A row's sums of backward: sum(g) and sum(g * x_hat), g = dy * w.
template <class Acc>
struct RowGradSums {
  Acc g;
  Acc g_x_hat;
};

template <class Acc>
struct RowGradSumsOp {
  MINIDL_HOST_DEVICE RowGradSums<Acc> identity() const { return {Acc(0), Acc(0)}; }
  MINIDL_HOST_DEVICE RowGradSums<Acc> accumulate(RowGradSums<Acc> acc, Acc g, Acc x_hat) const {
    acc.g += g;
    acc.g_x_hat += g * x_hat;
    return acc;
  }
  MINIDL_HOST_DEVICE RowGradSums<Acc> combine(RowGradSums<Acc> a, RowGradSums<Acc> b) const {
    return {a.g + b.g, a.g_x_hat + b.g_x_hat};
  }
};

// grad_input of one element (see the formulas at the top).
template <class Acc>
MINIDL_HOST_DEVICE Acc input_grad(Acc g, Acc x_hat, Acc rstd, const RowGradSums<Acc>& sums,
                                  int64_t cols) {
  const Acc count = static_cast<Acc>(cols);
  return rstd * (g - sums.g / count - x_hat * (sums.g_x_hat / count));
}

// A column's sums of the parameters' gradients: sum(dy * x_hat) (weight) and sum(dy) (bias).
template <class Acc>
struct ParameterGradSums {
  Acc weight;
  Acc bias;
};

template <class Acc>
struct ParameterGradSumsOp {
  MINIDL_HOST_DEVICE ParameterGradSums<Acc> identity() const { return {Acc(0), Acc(0)}; }
  MINIDL_HOST_DEVICE ParameterGradSums<Acc> accumulate(ParameterGradSums<Acc> acc, Acc dy,
                                                       Acc x_hat) const {
    acc.weight += dy * x_hat;
    acc.bias += dy;
    return acc;
  }
  MINIDL_HOST_DEVICE ParameterGradSums<Acc> combine(ParameterGradSums<Acc> a,
                                                    ParameterGradSums<Acc> b) const {
    return {a.weight + b.weight, a.bias + b.bias};
  }
};

}  // namespace minidl::layer_norm_math
