// CPU layer normalisation. The forward pass and grad_input are the row kernels it shares with
// group norm (ops/cpu/normalize_rows.h). grad_weight and grad_bias are summed per block of
// kRowsPerBlock rows, then over blocks in block order: the blocks depend on the shape alone, so
// results are the same bits at any thread count. The math is that of ops/layer_norm_math.h, shared
// with the CUDA kernels.
#include <algorithm>
#include <vector>

#include "minidl/core/ceil_div.h"
#include "minidl/core/parallel.h"
#include "minidl/ops/cpu/normalize_rows.h"
#include "minidl/ops/layer_norm_kernels.h"

namespace minidl::cpu {

namespace {

using normalize_rows::acc_t;
using normalize_rows::data_or_null;
using normalize_rows::kTaskElements;

// Rows whose parameter gradients are summed into one partial row.
constexpr int64_t kRowsPerBlock = 32;

void layer_norm_forward_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const layer_norm_math::RowLayout& layout, double eps) {
  visit_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    normalize_rows::forward(out.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(),
                            input.data_ptr<T>(), data_or_null<Acc>(weight), data_or_null<Acc>(bias),
                            layout, static_cast<Acc>(eps), layer_norm_math::ColumnParameter{});
  });
}

void layer_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight,
                                      const layer_norm_math::RowLayout& layout) {
  visit_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    normalize_rows::backward_input(grad_input.data_ptr<T>(), grad_output.data_ptr<T>(),
                                   input.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(),
                                   data_or_null<Acc>(weight), layout,
                                   layer_norm_math::ColumnParameter{});
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
