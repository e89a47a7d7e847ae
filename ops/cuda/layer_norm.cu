// CUDA layer normalisation. The math is that of ops/layer_norm_math.h, shared with the CPU.
//
// Conventions:
// - The forward pass and grad_input are the row kernels it shares with group norm
//   (ops/cuda/normalize_rows.cuh), each column under its own weight and bias.
// - grad_weight and grad_bias, sums over rows, take two launches: the first cuts the R rows into
//   `splits` ranges and folds each (column tile, range) into partial sums, laid out [splits, D]
//   in a workspace (block (kTileColumns, kTileRows): threadIdx.x walks neighbouring columns of a
//   row, for coalesced reads); the second merges a column's partials in split order. Without
//   host synchronisation, without atomics, and in a fixed tree, so results repeat exactly.
// - Every launch is on the current stream of the input's device and is followed by a launch
//   check; mean, rstd and the parameters are float (float64 never reaches the GPU).
#include <cuda_runtime.h>

#include <algorithm>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/cuda/normalize_rows.cuh"
#include "minidl/ops/layer_norm_kernels.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::cuda {

namespace {

using normalize_rows::Acc;
using normalize_rows::data_or_null;

constexpr int kTileColumns = 32;
constexpr int kTileRows = 8;
constexpr int kFinalizeThreads = 128;
// A range of the parameter-gradient reduction covers at least this many rows, so cutting the
// rows into ranges pays for the extra partial sums.
constexpr int64_t kMinRangeRows = 64;
constexpr int64_t kMaxSplits = 1024;
static_assert(kMaxSplits <= kMaxGridYZ, "the splits are the grid's y dimension");
constexpr int64_t kReductionBlocksPerMultiprocessor = 4;  // the reduction's target occupancy

// ---- kernels ----

// Block (kTileColumns, kTileRows); grid (column tiles, splits). Block (tile, split) folds rows
// [split * range_length, ...) of its kTileColumns columns into partial[split, column].
template <class T>
__global__ void parameter_grad_partials_kernel(layer_norm_math::ParameterGradSums<Acc>* partial,
                                               const T* grad_output, const T* x, const Acc* mean,
                                               const Acc* rstd, layer_norm_math::RowLayout layout,
                                               int64_t range_length) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kTileColumns + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * range_length;
  const int64_t end = min(layout.rows, begin + range_length);
  const layer_norm_math::ParameterGradSumsOp<Acc> op;
  layer_norm_math::ParameterGradSums<Acc> acc = op.identity();
  if (column < layout.cols)
    for (int64_t row = begin + threadIdx.y; row < end; row += kTileRows) {
      const int64_t i = row * layout.cols + column;
      acc =
          op.accumulate(acc, static_cast<Acc>(grad_output[i]),
                        layer_norm_math::normalized(static_cast<Acc>(x[i]), mean[row], rstd[row]));
    }
  acc = column_reduce<kTileColumns, kTileRows>(op, acc);
  if (threadIdx.y != 0 || column >= layout.cols) return;
  partial[blockIdx.y * layout.cols + column] = acc;
}

// partial [splits, D] -> grad_weight, grad_bias (each [D] or null), merging in split order. One
// thread per column.
__global__ void parameter_grad_finalize_kernel(
    Acc* grad_weight, Acc* grad_bias, const layer_norm_math::ParameterGradSums<Acc>* partial,
    int64_t cols, int64_t splits) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= cols) return;
  const layer_norm_math::ParameterGradSumsOp<Acc> op;
  layer_norm_math::ParameterGradSums<Acc> acc = partial[column];
  for (int64_t split = 1; split < splits; ++split)
    acc = op.combine(acc, partial[split * cols + column]);
  if (grad_weight) grad_weight[column] = acc.weight;
  if (grad_bias) grad_bias[column] = acc.bias;
}

// ---- launchers ----

void layer_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                        const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const layer_norm_math::RowLayout& layout, double eps) {
  normalize_rows::forward(out, mean, rstd, input, weight, bias, layout, eps,
                          layer_norm_math::ColumnParameter{}, "layer_norm");
}

void layer_norm_backward_input(const Tensor& grad_input, const Tensor& grad_output,
                               const Tensor& input, const Tensor& mean, const Tensor& rstd,
                               const Tensor& weight, const layer_norm_math::RowLayout& layout) {
  normalize_rows::backward_input(grad_input, grad_output, input, mean, rstd, weight, layout,
                                 layer_norm_math::ColumnParameter{}, "layer_norm");
}

void layer_norm_backward_parameters(const Tensor& grad_weight, const Tensor& grad_bias,
                                    const Tensor& grad_output, const Tensor& input,
                                    const Tensor& mean, const Tensor& rstd,
                                    const layer_norm_math::RowLayout& layout) {
  using Sums = layer_norm_math::ParameterGradSums<Acc>;
  LaunchContext context(input);
  const int64_t column_tiles = ceil_div(layout.cols, kTileColumns);
  const int64_t target_blocks =
      kReductionBlocksPerMultiprocessor * multiprocessor_count(context.device);
  const int64_t splits = std::clamp<int64_t>(
      std::min(ceil_div(target_blocks, column_tiles), layout.rows / kMinRangeRows), 1, kMaxSplits);
  const int64_t range_length = ceil_div(layout.rows, splits);
  Tensor workspace = empty({splits * layout.cols * static_cast<int64_t>(sizeof(Sums))},
                           TensorOptions(kUInt8).device(input.device()));
  auto* partial = static_cast<Sums*>(workspace.data_ptr());
  visit_device_floating(input.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    const dim3 grid(checked_grid_x(column_tiles, "layer_norm"), static_cast<unsigned>(splits));
    parameter_grad_partials_kernel<T><<<grid, dim3(kTileColumns, kTileRows), 0, context.stream>>>(
        partial, grad_output.data_ptr<T>(), input.data_ptr<T>(), mean.data_ptr<Acc>(),
        rstd.data_ptr<Acc>(), layout, range_length);
    MINIDL_LAUNCH_CHECK();
  });
  const auto finalize_blocks = static_cast<unsigned>(ceil_div(layout.cols, kFinalizeThreads));
  parameter_grad_finalize_kernel<<<finalize_blocks, kFinalizeThreads, 0, context.stream>>>(
      data_or_null(grad_weight), data_or_null(grad_bias), partial, layout.cols, splits);
  MINIDL_LAUNCH_CHECK();
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const LayerNormKernels LayerNormKernels::kCuda{
    .layer_norm_forward = cuda::layer_norm_forward,
    .layer_norm_backward_input = cuda::layer_norm_backward_input,
    .layer_norm_backward_parameters = cuda::layer_norm_backward_parameters,
};

}  // namespace minidl
