#pragma once
// The row kernels of layer norm and group norm on CUDA (ops/cuda/layer_norm.cu,
// ops/cuda/group_norm.cu): each row of a dense [R, D] view normalised on its own, with the
// per-element weight and bias that a ParameterOf functor names (layer_norm_math::ColumnParameter,
// group_norm_math::ChannelParameter), in the math of ops/layer_norm_math.h.
//
// Each row goes to one row of threads (block_reduce.cuh's sense): a warp (block
// (32, kWarpRowsPerBlock), kWarpRowsPerBlock rows to a block) when D <= kWarpRowMaxCols, else a
// whole block (kBlockRowThreads, 1). The row's threads stride over it, merge their sums with
// row_all_reduce, then each writes its elements. The forward pass reads a row twice (sum, then
// squared deviations from the mean); the second read comes from the cache. Launches run on the
// current stream of the input's device, each followed by a launch check; mean, rstd and the
// parameters are float (float64 never reaches the GPU).
#include <cuda_runtime.h>

#include "minidl/core/ceil_div.h"
#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/layer_norm_math.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::cuda::normalize_rows {

using Acc = float;

// Rows up to this long take a warp each; longer ones a block.
inline constexpr int64_t kWarpRowMaxCols = 1024;
inline constexpr int kWarpRowsPerBlock = 8;
inline constexpr int kBlockRowThreads = 256;

// A per-parameter tensor's data, or null for an undefined (optional) one.
inline Acc* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr<Acc>() : nullptr; }

// The row this thread's row of threads owns.
__device__ inline int64_t thread_row() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
}

// mean [R], rstd [R]; weight, bias or null.
template <class T, class ParameterOf>
__global__ void forward_kernel(T* y, Acc* mean, Acc* rstd, const T* x, const Acc* weight,
                               const Acc* bias, layer_norm_math::RowLayout layout, Acc eps,
                               ParameterOf parameter_of) {
  const int64_t row = thread_row();
  if (row >= layout.rows) return;  // the whole row of threads: no reduction is left waiting
  const int64_t cols = layout.cols;
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
    const int64_t p = parameter_of(row, j);
    const Acc x_hat = layer_norm_math::normalized(static_cast<Acc>(x_row[j]), row_mean, row_rstd);
    y_row[j] = static_cast<T>(
        layer_norm_math::affine(x_hat, weight ? weight[p] : Acc(1), bias ? bias[p] : Acc(0)));
  }
}

// Geometry as forward_kernel's. weight or null.
template <class T, class ParameterOf>
__global__ void backward_input_kernel(T* grad_input, const T* grad_output, const T* x,
                                      const Acc* mean, const Acc* rstd, const Acc* weight,
                                      layer_norm_math::RowLayout layout, ParameterOf parameter_of) {
  const int64_t row = thread_row();
  if (row >= layout.rows) return;  // the whole row of threads
  const int64_t cols = layout.cols;
  const int64_t first = row * cols;
  const Acc row_mean = mean[row], row_rstd = rstd[row];
  const layer_norm_math::RowGradSumsOp<Acc> op;
  layer_norm_math::RowGradSums<Acc> sums = op.identity();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const Acc g =
        static_cast<Acc>(grad_output[first + j]) * (weight ? weight[parameter_of(row, j)] : Acc(1));
    sums = op.accumulate(
        sums, g, layer_norm_math::normalized(static_cast<Acc>(x[first + j]), row_mean, row_rstd));
  }
  sums = row_all_reduce(op, sums);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const Acc g =
        static_cast<Acc>(grad_output[first + j]) * (weight ? weight[parameter_of(row, j)] : Acc(1));
    const Acc x_hat =
        layer_norm_math::normalized(static_cast<Acc>(x[first + j]), row_mean, row_rstd);
    grad_input[first + j] =
        static_cast<T>(layer_norm_math::input_grad(g, x_hat, row_rstd, sums, cols));
  }
}

// The launch geometry of the row kernels (see the top); `op` names the op in errors.
struct RowGeometry {
  dim3 grid, block;
};

inline RowGeometry row_geometry(const layer_norm_math::RowLayout& layout, const char* op) {
  if (layout.cols <= kWarpRowMaxCols)
    return {dim3(checked_grid_x(ceil_div(layout.rows, kWarpRowsPerBlock), op)),
            dim3(kWarpSize, kWarpRowsPerBlock)};
  return {dim3(checked_grid_x(layout.rows, op)), dim3(kBlockRowThreads)};
}

// out = the normalised input under weight and bias (each optional); mean and rstd [R] saved.
template <class ParameterOf>
void forward(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& input,
             const Tensor& weight, const Tensor& bias, const layer_norm_math::RowLayout& layout,
             double eps, ParameterOf parameter_of, const char* op) {
  LaunchContext context(input);
  const RowGeometry geometry = row_geometry(layout, op);
  visit_device_floating(input.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<geometry.grid, geometry.block, 0, context.stream>>>(
        out.data_ptr<T>(), mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(), input.data_ptr<T>(),
        data_or_null(weight), data_or_null(bias), layout, static_cast<Acc>(eps), parameter_of);
    MINIDL_LAUNCH_CHECK();
  });
}

// grad_input from the saved mean and rstd (weight optional).
template <class ParameterOf>
void backward_input(const Tensor& grad_input, const Tensor& grad_output, const Tensor& input,
                    const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                    const layer_norm_math::RowLayout& layout, ParameterOf parameter_of,
                    const char* op) {
  LaunchContext context(input);
  const RowGeometry geometry = row_geometry(layout, op);
  visit_device_floating(input.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    backward_input_kernel<T><<<geometry.grid, geometry.block, 0, context.stream>>>(
        grad_input.data_ptr<T>(), grad_output.data_ptr<T>(), input.data_ptr<T>(),
        mean.data_ptr<Acc>(), rstd.data_ptr<Acc>(), data_or_null(weight), layout, parameter_of);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace minidl::cuda::normalize_rows
