#pragma once
// The row kernels of layer norm and group norm on the CPU (ops/cpu/layer_norm.cpp,
// ops/cpu/group_norm.cpp): each row of a dense [R, D] view normalised on its own, with the
// per-element weight and bias that a ParameterOf functor names (layer_norm_math::ColumnParameter,
// group_norm_math::ChannelParameter), in the math of ops/layer_norm_math.h. Rows run in parallel
// in blocks, each row by one thread; a row's sums run in kLanes interleaved partial sums (so the
// compiler can vectorise them) merged in lane order, so results are the same bits at any thread
// count.
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "minidl/core/parallel.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/layer_norm_math.h"

namespace minidl::cpu::normalize_rows {

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Elements one task handles: enough to amortise starting it.
inline constexpr int64_t kTaskElements = 16384;
// Independent partial sums of a reduction (one AVX-512 register of float).
inline constexpr int64_t kLanes = 16;

// A per-parameter tensor's data, or null for an undefined (optional) one.
template <class Acc>
const Acc* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<Acc>() : nullptr;
}

// Calls fn(item) for every item in [0, count) of `item_elements` elements each, several items to
// a task when they are short.
template <class Fn>
void for_each_item(int64_t count, int64_t item_elements, const Fn& fn) {
  const int64_t grain = std::max<int64_t>(1, kTaskElements / std::max<int64_t>(item_elements, 1));
  parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) fn(item);
  });
}

// sum over j < count of term(j), in kLanes interleaved partial sums merged in lane order.
template <class Acc, class Term>
Acc lane_sum(int64_t count, const Term& term) {
  std::array<Acc, kLanes> lanes{};
  const int64_t whole = count - count % kLanes;
  for (int64_t j = 0; j < whole; j += kLanes)
    for (int64_t lane = 0; lane < kLanes; ++lane) lanes[lane] += term(j + lane);
  for (int64_t j = whole; j < count; ++j) lanes[j - whole] += term(j);
  Acc sum = 0;
  for (Acc lane : lanes) sum += lane;
  return sum;
}

// y = x_hat * weight[p] + bias[p] for every row (p = parameter_of(row, j); weight and bias may be
// null), saving each row's mean and rstd.
template <class T, class Acc, class ParameterOf>
void forward(T* y, Acc* mean, Acc* rstd, const T* x, const Acc* weight, const Acc* bias,
             layer_norm_math::RowLayout layout, Acc eps, const ParameterOf& parameter_of) {
  const int64_t cols = layout.cols;
  for_each_item(layout.rows, cols, [&](int64_t row) {
    const T* x_row = x + row * cols;
    T* y_row = y + row * cols;
    const Acc row_mean = layer_norm_math::row_mean(
        lane_sum<Acc>(cols, [&](int64_t j) { return static_cast<Acc>(x_row[j]); }), cols);
    const Acc row_rstd =
        layer_norm_math::row_rstd(lane_sum<Acc>(cols,
                                                [&](int64_t j) {
                                                  return layer_norm_math::squared_deviation(
                                                      static_cast<Acc>(x_row[j]), row_mean);
                                                }),
                                  cols, eps);
    mean[row] = row_mean;
    rstd[row] = row_rstd;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t p = parameter_of(row, j);
      const Acc x_hat = layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
      y_row[j] = static_cast<T>(
          layer_norm_math::affine(x_hat, weight ? weight[p] : Acc(1), bias ? bias[p] : Acc(0)));
    }
  });
}

// grad_input of every row, from the saved mean and rstd (weight may be null).
template <class T, class Acc, class ParameterOf>
void backward_input(T* dx, const T* dy, const T* x, const Acc* mean, const Acc* rstd,
                    const Acc* weight, layer_norm_math::RowLayout layout,
                    const ParameterOf& parameter_of) {
  const int64_t cols = layout.cols;
  for_each_item(layout.rows, cols, [&](int64_t row) {
    const T* x_row = x + row * cols;
    const T* dy_row = dy + row * cols;
    T* dx_row = dx + row * cols;
    const Acc row_mean = mean[row], row_rstd = rstd[row];
    const auto g = [&](int64_t j) {
      return static_cast<Acc>(dy_row[j]) * (weight ? weight[parameter_of(row, j)] : Acc(1));
    };
    const auto x_hat = [&](int64_t j) {
      return layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
    };
    const layer_norm_math::RowGradSums<Acc> sums{
        lane_sum<Acc>(cols, g), lane_sum<Acc>(cols, [&](int64_t j) { return g(j) * x_hat(j); })};
    for (int64_t j = 0; j < cols; ++j)
      dx_row[j] = static_cast<T>(layer_norm_math::input_grad(g(j), x_hat(j), row_rstd, sums, cols));
  });
}

}  // namespace minidl::cpu::normalize_rows
