// CPU group normalisation. Rows (sample, group) are independent: the forward pass and
// grad_input run in parallel over blocks of rows, each row by one thread, its sums in kLanes
// interleaved partial sums merged in lane order (as ops/cpu/layer_norm.cpp). grad_weight and
// grad_bias run in parallel over channels, each channel's sum by one thread, sample by sample in
// order: results are the same bits at any thread count. The math is that of
// ops/group_norm_math.h and ops/layer_norm_math.h, shared with the CUDA kernels.
#include <algorithm>
#include <array>
#include <type_traits>

#include "minidl/core/parallel.h"
#include "minidl/ops/group_norm_kernels.h"

namespace minidl::cpu {

namespace {

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Elements one task handles: enough to amortise starting it.
constexpr int64_t kTaskElements = 16384;
// Independent partial sums of a reduction (one AVX-512 register of float).
constexpr int64_t kLanes = 16;

template <class Acc>
const Acc* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<Acc>() : nullptr;
}

// Calls fn(begin, end) over [0, count) items of `item_elements` elements each, several items to
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

void group_norm_forward_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const group_norm_math::GroupLayout& layout, double eps) {
  visit_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    T* y = out.data_ptr<T>();
    Acc* mean_out = mean.data_ptr<Acc>();
    Acc* rstd_out = rstd.data_ptr<Acc>();
    const Acc* weight_data = data_or_null<Acc>(weight);
    const Acc* bias_data = data_or_null<Acc>(bias);
    const layer_norm_math::RowLayout rows = layout.rows();
    const int64_t cols = rows.cols, spatial = layout.spatial;
    const Acc acc_eps = static_cast<Acc>(eps);
    for_each_item(rows.rows, cols, [&](int64_t row) {
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
                                    cols, acc_eps);
      mean_out[row] = row_mean;
      rstd_out[row] = row_rstd;
      // A channel's S values at a time, under its weight and bias.
      for (int64_t first = 0; first < cols; first += spatial) {
        const int64_t c = layout.channel_of(row, first);
        const Acc w = weight_data ? weight_data[c] : Acc(1);
        const Acc b = bias_data ? bias_data[c] : Acc(0);
        for (int64_t j = first; j < first + spatial; ++j)
          y_row[j] = static_cast<T>(layer_norm_math::affine(
              layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd), w, b));
      }
    });
  });
}

void group_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight,
                                      const group_norm_math::GroupLayout& layout) {
  visit_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    T* dx = grad_input.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* rstd_data = rstd.data_ptr<Acc>();
    const Acc* weight_data = data_or_null<Acc>(weight);
    const layer_norm_math::RowLayout rows = layout.rows();
    const int64_t cols = rows.cols;
    for_each_item(rows.rows, cols, [&](int64_t row) {
      const T* x_row = x + row * cols;
      const T* dy_row = dy + row * cols;
      T* dx_row = dx + row * cols;
      const Acc row_mean = mean_data[row], row_rstd = rstd_data[row];
      const auto g = [&](int64_t j) {
        return static_cast<Acc>(dy_row[j]) *
               (weight_data ? weight_data[layout.channel_of(row, j)] : Acc(1));
      };
      const auto x_hat = [&](int64_t j) {
        return layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
      };
      const layer_norm_math::RowGradSums<Acc> sums{
          lane_sum<Acc>(cols, g), lane_sum<Acc>(cols, [&](int64_t j) { return g(j) * x_hat(j); })};
      for (int64_t j = 0; j < cols; ++j)
        dx_row[j] =
            static_cast<T>(layer_norm_math::input_grad(g(j), x_hat(j), row_rstd, sums, cols));
    });
  });
}

void group_norm_backward_parameters_kernel(const Tensor& grad_weight, const Tensor& grad_bias,
                                           const Tensor& grad_output, const Tensor& input,
                                           const Tensor& mean, const Tensor& rstd,
                                           const group_norm_math::GroupLayout& layout) {
  visit_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* rstd_data = rstd.data_ptr<Acc>();
    Acc* grad_weight_out = grad_weight.defined() ? grad_weight.data_ptr<Acc>() : nullptr;
    Acc* grad_bias_out = grad_bias.defined() ? grad_bias.data_ptr<Acc>() : nullptr;
    const int64_t spatial = layout.spatial, channels = layout.channels;
    for_each_item(channels, layout.samples * spatial, [&](int64_t c) {
      Acc weight_sum = 0, bias_sum = 0;
      for (int64_t n = 0; n < layout.samples; ++n) {
        const int64_t row = layout.row_of(n, c);
        const Acc row_mean = mean_data[row], row_rstd = rstd_data[row];
        const T* x_plane = x + (n * channels + c) * spatial;
        const T* dy_plane = dy + (n * channels + c) * spatial;
        weight_sum += lane_sum<Acc>(spatial, [&](int64_t s) {
          return static_cast<Acc>(dy_plane[s]) *
                 layer_norm_math::normalized(static_cast<Acc>(x_plane[s]), row_mean, row_rstd);
        });
        bias_sum +=
            lane_sum<Acc>(spatial, [&](int64_t s) { return static_cast<Acc>(dy_plane[s]); });
      }
      if (grad_weight_out) grad_weight_out[c] = weight_sum;
      if (grad_bias_out) grad_bias_out[c] = bias_sum;
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const GroupNormKernels GroupNormKernels::kCpu{
    .group_norm_forward = cpu::group_norm_forward_kernel,
    .group_norm_backward_input = cpu::group_norm_backward_input_kernel,
    .group_norm_backward_parameters = cpu::group_norm_backward_parameters_kernel,
};

}  // namespace minidl
