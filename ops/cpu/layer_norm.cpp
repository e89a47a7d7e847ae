// CPU layer normalisation. Rows are independent: the forward pass and grad_input run in
// parallel over blocks of rows, each row by one thread. A row's sums run in kLanes interleaved
// partial sums (so the compiler can vectorise them) merged in lane order, and grad_weight and
// grad_bias are summed per block of kRowsPerBlock rows, then over blocks in block order: the
// blocks depend on the shape alone, so results are the same bits at any thread count. The math
// is that of ops/layer_norm_math.h, shared with the CUDA kernels.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/ceil_div.h"
#include "minidl/ops/layer_norm_kernels.h"

namespace minidl::cpu {

namespace {

// float for float32 and the 16-bit types, double for float64.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Elements one task handles: enough to amortise starting it.
constexpr int64_t kTaskElements = 16384;
// Independent partial sums of a row's reduction (one AVX-512 register of float).
constexpr int64_t kLanes = 16;
// Rows whose parameter gradients are summed into one partial row.
constexpr int64_t kRowsPerBlock = 32;

template <class Acc>
const Acc* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<Acc>() : nullptr;
}

// Calls fn(row) for every row, several rows to a task when rows are short.
template <class Fn>
void for_each_row(const layer_norm_math::RowLayout& layout, const Fn& fn) {
  const int64_t grain = std::max<int64_t>(1, kTaskElements / std::max<int64_t>(layout.cols, 1));
  parallel_for(0, layout.rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) fn(row);
  });
}

// sum over j < cols of term(j), in kLanes interleaved partial sums merged in lane order.
template <class Acc, class Term>
Acc lane_sum(int64_t cols, const Term& term) {
  std::array<Acc, kLanes> lanes{};
  const int64_t whole = cols - cols % kLanes;
  for (int64_t j = 0; j < whole; j += kLanes)
    for (int64_t lane = 0; lane < kLanes; ++lane) lanes[lane] += term(j + lane);
  for (int64_t j = whole; j < cols; ++j) lanes[j - whole] += term(j);
  Acc sum = 0;
  for (Acc lane : lanes) sum += lane;
  return sum;
}

void layer_norm_forward_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const layer_norm_math::RowLayout& layout, double eps) {
  visit_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    T* y = out.data_ptr<T>();
    Acc* mean_out = mean.data_ptr<Acc>();
    Acc* rstd_out = rstd.data_ptr<Acc>();
    const Acc* weight_data = data_or_null<Acc>(weight);
    const Acc* bias_data = data_or_null<Acc>(bias);
    const int64_t cols = layout.cols;
    const Acc acc_eps = static_cast<Acc>(eps);
    for_each_row(layout, [&](int64_t row) {
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
      for (int64_t j = 0; j < cols; ++j) {
        const Acc x_hat =
            layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
        y_row[j] = static_cast<T>(layer_norm_math::affine(
            x_hat, weight_data ? weight_data[j] : Acc(1), bias_data ? bias_data[j] : Acc(0)));
      }
    });
  });
}

void layer_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight,
                                      const layer_norm_math::RowLayout& layout) {
  visit_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    T* dx = grad_input.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* rstd_data = rstd.data_ptr<Acc>();
    const Acc* weight_data = data_or_null<Acc>(weight);
    const int64_t cols = layout.cols;
    for_each_row(layout, [&](int64_t row) {
      const T* x_row = x + row * cols;
      const T* dy_row = dy + row * cols;
      T* dx_row = dx + row * cols;
      const Acc row_mean = mean_data[row], row_rstd = rstd_data[row];
      const auto g = [&](int64_t j) {
        return static_cast<Acc>(dy_row[j]) * (weight_data ? weight_data[j] : Acc(1));
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

void layer_norm_backward_parameters_kernel(const Tensor& grad_weight, const Tensor& grad_bias,
                                           const Tensor& grad_output, const Tensor& input,
                                           const Tensor& mean, const Tensor& rstd,
                                           const layer_norm_math::RowLayout& layout) {
  visit_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const T* x = input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    const Acc* mean_data = mean.data_ptr<Acc>();
    const Acc* rstd_data = rstd.data_ptr<Acc>();
    Acc* grad_weight_out = grad_weight.defined() ? grad_weight.data_ptr<Acc>() : nullptr;
    Acc* grad_bias_out = grad_bias.defined() ? grad_bias.data_ptr<Acc>() : nullptr;
    const int64_t rows = layout.rows, cols = layout.cols;
    const int64_t blocks = ceil_div(rows, kRowsPerBlock);
    // partial_weight and partial_bias: [blocks, D], block b's sums over its rows, in row order.
    std::vector<Acc> partial_weight(static_cast<size_t>(blocks * cols));
    std::vector<Acc> partial_bias(static_cast<size_t>(blocks * cols));
    const int64_t block_grain =
        std::max<int64_t>(1, kTaskElements / std::max<int64_t>(kRowsPerBlock * cols, 1));
    parallel_for(0, blocks, block_grain, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        Acc* weight_sums = partial_weight.data() + block * cols;
        Acc* bias_sums = partial_bias.data() + block * cols;
        const int64_t last_row = std::min(rows, (block + 1) * kRowsPerBlock);
        for (int64_t row = block * kRowsPerBlock; row < last_row; ++row) {
          const T* x_row = x + row * cols;
          const T* dy_row = dy + row * cols;
          const Acc row_mean = mean_data[row], row_rstd = rstd_data[row];
          for (int64_t j = 0; j < cols; ++j) {
            const Acc dy_j = static_cast<Acc>(dy_row[j]);
            weight_sums[j] +=
                dy_j * layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
            bias_sums[j] += dy_j;
          }
        }
      }
    });
    // Merge the blocks in block order, columns in parallel.
    const int64_t column_grain = std::max<int64_t>(1, kTaskElements / std::max<int64_t>(blocks, 1));
    parallel_for(0, cols, column_grain, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        Acc weight_sum = 0, bias_sum = 0;
        for (int64_t block = 0; block < blocks; ++block) {
          weight_sum += partial_weight[block * cols + j];
          bias_sum += partial_bias[block * cols + j];
        }
        if (grad_weight_out) grad_weight_out[j] = weight_sum;
        if (grad_bias_out) grad_bias_out[j] = bias_sum;
      }
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const LayerNormKernels LayerNormKernels::kCpu{
    .layer_norm_forward = cpu::layer_norm_forward_kernel,
    .layer_norm_backward_input = cpu::layer_norm_backward_input_kernel,
    .layer_norm_backward_parameters = cpu::layer_norm_backward_parameters_kernel,
};

}  // namespace minidl
