// CUDA group normalisation. The math is that of ops/group_norm_math.h and
// ops/layer_norm_math.h, shared with the CPU.
//
// Conventions:
// - Row kernels (forward; grad_input) give each (sample, group) row of C / G * S values to one
//   row of threads (block_reduce.cuh's sense), as ops/cuda/layer_norm.cu does: a warp (block
//   (32, kWarpRowsPerBlock)) when the row has at most kWarpRowMaxCols values, else a whole block
//   (kBlockRowThreads, 1). The row's threads stride over it and merge their sums with
//   row_all_reduce; each element's weight and bias are its channel's.
// - grad_weight and grad_bias: one block of kChannelThreads threads per channel, its threads
//   striding over the channel's N * S values in a fixed order and merged by row_reduce: a fixed
//   tree, without atomics, so results repeat exactly.
// - Every launch is on the current stream of the input's device and is followed by a launch
//   check; mean, rstd and the parameters are float (float64 never reaches the GPU).
#include <cuda_runtime.h>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/group_norm_kernels.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::cuda {

namespace {

using Acc = float;

// Rows up to this long take a warp each; longer ones a block.
constexpr int64_t kWarpRowMaxCols = 1024;
constexpr int kWarpRowsPerBlock = 8;
constexpr int kBlockRowThreads = 256;
constexpr int kChannelThreads = 256;

// ---- kernels ----

// The row this thread's row of threads owns.
__device__ int64_t thread_row() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
}

// Block (32, kWarpRowsPerBlock) or (kBlockRowThreads, 1); grid: one block per blockDim.y rows.
// mean, rstd [N * G]; weight, bias [C] or null.
template <class T>
__global__ void group_norm_forward_kernel(T* y, Acc* mean, Acc* rstd, const T* x, const Acc* weight,
                                          const Acc* bias, group_norm_math::GroupLayout layout,
                                          Acc eps) {
  const int64_t row = thread_row();
  const layer_norm_math::RowLayout rows = layout.rows();
  if (row >= rows.rows) return;  // the whole row of threads: no reduction is left waiting
  const int64_t cols = rows.cols;
  const T* x_row = x + row * cols;
  T* y_row = y + row * cols;
  const reduce_math::SumOp<Acc> sum_op;
  Acc sum = sum_op.identity();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += static_cast<Acc>(x_row[j]);
  const Acc row_mean = layer_norm_math::row_mean(row_all_reduce(sum_op, sum), cols);
  Acc squared_deviations = sum_op.identity();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    squared_deviations += layer_norm_math::squared_deviation(static_cast<Acc>(x_row[j]), row_mean);
  const Acc row_rstd =
      layer_norm_math::row_rstd(row_all_reduce(sum_op, squared_deviations), cols, eps);
  if (threadIdx.x == 0) {
    mean[row] = row_mean;
    rstd[row] = row_rstd;
  }
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const int64_t c = layout.channel_of(row, j);
    const Acc x_hat = layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
    y_row[j] = static_cast<T>(
        layer_norm_math::affine(x_hat, weight ? weight[c] : Acc(1), bias ? bias[c] : Acc(0)));
  }
}

// Geometry as group_norm_forward_kernel's. weight [C] or null.
template <class T>
__global__ void group_norm_backward_input_kernel(T* grad_input, const T* grad_output, const T* x,
                                                 const Acc* mean, const Acc* rstd,
                                                 const Acc* weight,
                                                 group_norm_math::GroupLayout layout) {
  const int64_t row = thread_row();
  const layer_norm_math::RowLayout rows = layout.rows();
  if (row >= rows.rows) return;  // the whole row of threads
  const int64_t cols = rows.cols;
  const int64_t first = row * cols;
  const Acc row_mean = mean[row], row_rstd = rstd[row];
  const layer_norm_math::RowGradSumsOp<Acc> op;
  layer_norm_math::RowGradSums<Acc> sums = op.identity();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const Acc g = static_cast<Acc>(grad_output[first + j]) *
                  (weight ? weight[layout.channel_of(row, j)] : Acc(1));
    sums = op.accumulate(
        sums, g, layer_norm_math::normalized(static_cast<Acc>(x[first + j]), row_mean, row_rstd));
  }
  sums = row_all_reduce(op, sums);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const Acc g = static_cast<Acc>(grad_output[first + j]) *
                  (weight ? weight[layout.channel_of(row, j)] : Acc(1));
    const Acc x_hat =
        layer_norm_math::normalized(static_cast<Acc>(x[first + j]), row_mean, row_rstd);
    grad_input[first + j] =
        static_cast<T>(layer_norm_math::input_grad(g, x_hat, row_rstd, sums, cols));
  }
}

// Block (kChannelThreads); grid: one block per channel. grad_weight, grad_bias [C] or null.
template <class T>
__global__ void group_norm_backward_parameters_kernel(Acc* grad_weight, Acc* grad_bias,
                                                      const T* grad_output, const T* x,
                                                      const Acc* mean, const Acc* rstd,
                                                      group_norm_math::GroupLayout layout) {
  const int64_t c = blockIdx.x;
  const int64_t spatial = layout.spatial, count = layout.samples * spatial;
  const layer_norm_math::ParameterGradSumsOp<Acc> op;
  layer_norm_math::ParameterGradSums<Acc> acc = op.identity();
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t n = k / spatial;
    const int64_t i = (n * layout.channels + c) * spatial + k % spatial;
    const int64_t row = layout.row_of(n, c);
    acc = op.accumulate(acc, static_cast<Acc>(grad_output[i]),
                        layer_norm_math::normalized(static_cast<Acc>(x[i]), mean[row], rstd[row]));
  }
  acc = row_reduce(op, acc);
  if (threadIdx.x != 0) return;
  if (grad_weight) grad_weight[c] = acc.weight;
  if (grad_bias) grad_bias[c] = acc.bias;
}

// ---- launchers ----

// A per-channel tensor's data, or null for an undefined (optional) one.
Acc* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr<Acc>() : nullptr; }

struct RowGeometry {
  dim3 grid, block;
};

RowGeometry row_geometry(const group_norm_math::GroupLayout& layout) {
  const layer_norm_math::RowLayout rows = layout.rows();
  if (rows.cols <= kWarpRowMaxCols)
    return {dim3(checked_grid_x(ceil_div(rows.rows, kWarpRowsPerBlock), "group_norm")),
            dim3(kWarpSize, kWarpRowsPerBlock)};
  return {dim3(checked_grid_x(rows.rows, "group_norm")), dim3(kBlockRowThreads)};
}

void group_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                        const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const group_norm_math::GroupLayout& layout, double eps) {
  LaunchContext context(input);
  const RowGeometry geometry = row_geometry(layout);
  visit_device_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    group_norm_forward_kernel<T><<<geometry.grid, geometry.block, 0, context.stream>>>(
        out.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(), input.data_ptr<T>(),
        data_or_null(weight), data_or_null(bias), layout, static_cast<Acc>(eps));
    MINIDL_LAUNCH_CHECK();
  });
}

void group_norm_backward_input(const Tensor& grad_input, const Tensor& grad_output,
                               const Tensor& input, const Tensor& mean, const Tensor& rstd,
                               const Tensor& weight, const group_norm_math::GroupLayout& layout) {
  LaunchContext context(input);
  const RowGeometry geometry = row_geometry(layout);
  visit_device_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    group_norm_backward_input_kernel<T><<<geometry.grid, geometry.block, 0, context.stream>>>(
        grad_input.data_ptr<T>(), grad_output.data_ptr<T>(), input.data_ptr<T>(),
        mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(), data_or_null(weight), layout);
    MINIDL_LAUNCH_CHECK();
  });
}

void group_norm_backward_parameters(const Tensor& grad_weight, const Tensor& grad_bias,
                                    const Tensor& grad_output, const Tensor& input,
                                    const Tensor& mean, const Tensor& rstd,
                                    const group_norm_math::GroupLayout& layout) {
  LaunchContext context(input);
  visit_device_floating(input.dtype(), "group_norm", [&](auto zero) {
    using T = decltype(zero);
    group_norm_backward_parameters_kernel<T>
        <<<checked_grid_x(layout.channels, "group_norm"), kChannelThreads, 0, context.stream>>>(
            data_or_null(grad_weight), data_or_null(grad_bias), grad_output.data_ptr<T>(),
            input.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(), layout);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const GroupNormKernels GroupNormKernels::kCuda{
    .group_norm_forward = cuda::group_norm_forward,
    .group_norm_backward_input = cuda::group_norm_backward_input,
    .group_norm_backward_parameters = cuda::group_norm_backward_parameters,
};

}  // namespace minidl
