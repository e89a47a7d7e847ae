// CUDA batch normalisation. The math is that of ops/norm_math.h, shared with the CPU.
//
// Conventions:
// - Per-channel reductions (batch statistics forward, gradient sums backward) run in two
//   launches. The first cuts each channel's M = N * S values into `splits` ranges and folds
//   each (channel, range) into a partial accumulator in a workspace laid out [splits, C]; the
//   second merges a channel's partials in split order and finishes it (mean, invstd and the
//   running statistics update, or the two gradient sums). Without host synchronisation, without
//   atomics, and in a fixed tree, so results repeat exactly.
// - The first launch takes one of two shapes, chosen for coalesced reads:
//     planes  (NCHW, channels outside the spatial dims): block (kPlaneThreads) per (channel,
//             range); its threads read a plane's consecutive values.
//     columns (NHWC and [N, C], channels innermost): block (kTileChannels, kTileRows) per
//             (channel tile, range); threadIdx.x walks neighbouring channels of one row.
// - Element-wise passes (normalise forward, grad_input backward) take one thread per element in
//   memory order and find the element's channel from the layout.
//
// Pooling and batch norm on CUDA are these kernels alone; cuDNN's pooling and batch norm have
// not been measured against them (docs/gpu.md, "Not run on a GPU yet").
#include <cuda_runtime.h>

#include <algorithm>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/norm_kernels.h"

namespace minidl::cuda {

namespace {

// Statistics and sums in float (float64 never reaches the GPU).
using Acc = float;

constexpr int kPlaneThreads = 256;
constexpr int kTileChannels = 32;
constexpr int kTileRows = 8;
constexpr int kFinalizeThreads = 128;
// A range's block reads at least this many values, so cutting channels into ranges pays for
// the extra partial results.
constexpr int64_t kMinRangeElements = 4096;
constexpr int64_t kMaxSplits = 1024;
static_assert(kMaxSplits <= kMaxGridYZ, "the splits are the grid's y dimension");
constexpr int64_t kReductionBlocksPerMultiprocessor = 4;  // the reduction's target occupancy

// ---- reductions: what is folded per element ----

// Folds input values into their moments (forward statistics).
template <class T>
struct MomentsReader {
  using Result = norm::Moments<Acc>;
  const T* x;
  norm::MomentsOp<Acc> op;
  __device__ Result identity() const { return op.identity(); }
  __device__ Result accumulate(Result acc, int64_t offset, int64_t) const {
    return op.accumulate(acc, static_cast<Acc>(x[offset]), 0);
  }
  __device__ Result combine(Result a, Result b) const { return op.combine(a, b); }
};

// Folds (dy, x) pairs into sum(dy) and sum(dy * (x - mean)) (backward).
template <class T>
struct GradSumsReader {
  using Result = norm::GradSums<Acc>;
  const T* grad_output;
  const T* x;
  const Acc* mean;
  norm::GradSumsOp<Acc> op;
  __device__ Result identity() const { return op.identity(); }
  __device__ Result accumulate(Result acc, int64_t offset, int64_t c) const {
    return op.accumulate(acc, static_cast<Acc>(grad_output[offset]), static_cast<Acc>(x[offset]),
                         mean[c]);
  }
  __device__ Result combine(Result a, Result b) const { return op.combine(a, b); }
};

// ---- reductions: how a channel's merged result is finished ----

struct FinishStatistics {
  Acc* mean;
  Acc* invstd;
  Acc* running_mean;  // null: not tracked
  Acc* running_var;   // null: not tracked
  Acc eps, momentum;
  __device__ void operator()(int64_t c, const norm::Moments<Acc>& moments) const {
    norm::finish_statistics<Acc>(moments, c, eps, momentum, mean, invstd, running_mean,
                                 running_var);
  }
};

struct FinishGradSums {
  Acc* sum_dy;
  Acc* sum_dy_xmu;
  __device__ void operator()(int64_t c, const norm::GradSums<Acc>& sums) const {
    sum_dy[c] = sums.dy;
    sum_dy_xmu[c] = sums.dy_xmu;
  }
};

// ---- reduction kernels ----

// Channels outside the spatial dims. Block (kPlaneThreads); grid (C, splits). Block (c, split)
// folds values k in [split * range_length, ...) of channel c, k = n * S + s.
template <class Reader>
__global__ void reduce_planes_kernel(Reader reader, norm::ChannelLayout layout,
                                     int64_t range_length, typename Reader::Result* partial) {
  const int64_t c = blockIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * range_length;
  const int64_t end = min(layout.count(), begin + range_length);
  typename Reader::Result acc = reader.identity();
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    const int64_t n = k / layout.spatial;
    acc = reader.accumulate(acc, layout.at(n, c, k - n * layout.spatial), c);
  }
  acc = row_reduce(reader, acc);  // the block is one row of kPlaneThreads
  if (threadIdx.x == 0) partial[blockIdx.y * layout.channels + c] = acc;
}

// Channels innermost: value m of channel c sits at m * C + c. Block (kTileChannels,
// kTileRows); grid (channel tiles, splits).
template <class Reader>
__global__ void reduce_columns_kernel(Reader reader, norm::ChannelLayout layout,
                                      int64_t range_length, typename Reader::Result* partial) {
  using Result = typename Reader::Result;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileChannels + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * range_length;
  const int64_t end = min(layout.count(), begin + range_length);
  Result acc = reader.identity();
  if (c < layout.channels)
    for (int64_t m = begin + threadIdx.y; m < end; m += kTileRows)
      acc = reader.accumulate(acc, m * layout.channels + c, c);
  acc = column_reduce<kTileChannels, kTileRows>(reader, acc);
  if (threadIdx.y != 0 || c >= layout.channels) return;
  partial[blockIdx.y * layout.channels + c] = acc;
}

// partial [splits, C] -> finish(c, merged), merging in split order. One thread per channel.
template <class Reader, class Finish>
__global__ void finalize_channels_kernel(Reader reader, const typename Reader::Result* partial,
                                         int64_t channels, int64_t splits, Finish finish) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  typename Reader::Result acc = partial[c];
  for (int64_t s = 1; s < splits; ++s) acc = reader.combine(acc, partial[s * channels + c]);
  finish(c, acc);
}

// ---- element-wise kernels ----

// y = normalize(x) for every element, in memory order.
template <class T>
__global__ void normalize_kernel(T* y, const T* x, const Acc* mean, const Acc* invstd,
                                 const Acc* weight, const Acc* bias, norm::ChannelLayout layout) {
  const int64_t numel = layout.numel();
  for (const int64_t i : grid_stride_range(numel)) {
    const int64_t c = layout.channel_of(i);
    y[i] = static_cast<T>(norm::normalize(static_cast<Acc>(x[i]), mean[c], invstd[c],
                                          weight ? weight[c] : Acc(1), bias ? bias[c] : Acc(0)));
  }
}

template <class T>
__global__ void input_grad_kernel(T* grad_input, const T* grad_output, const T* x, const Acc* mean,
                                  const Acc* invstd, const Acc* weight, const Acc* sum_dy,
                                  const Acc* sum_dy_xmu, norm::ChannelLayout layout,
                                  norm::Statistics statistics) {
  const int64_t numel = layout.numel();
  const bool batch = statistics == norm::Statistics::Batch;
  for (const int64_t i : grid_stride_range(numel)) {
    const int64_t c = layout.channel_of(i);
    grad_input[i] = static_cast<T>(norm::input_grad(
        statistics, static_cast<Acc>(grad_output[i]), static_cast<Acc>(x[i]), mean[c], invstd[c],
        weight ? weight[c] : Acc(1), batch ? sum_dy[c] : Acc(0), batch ? sum_dy_xmu[c] : Acc(0),
        layout.count()));
  }
}

// ---- launchers ----

// A per-channel tensor's data, or null for an undefined (optional) one.
Acc* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr<Acc>() : nullptr; }

// Reduces every channel of `layout` with `reader`, then calls finish(c, result) per channel
// (see the conventions at the top).
template <class Reader, class Finish>
void reduce_channels(const Tensor& input, const norm::ChannelLayout& layout, const Reader& reader,
                     const Finish& finish) {
  using Result = typename Reader::Result;
  LaunchContext context(input);
  const int64_t target_blocks =
      kReductionBlocksPerMultiprocessor * multiprocessor_count(context.device);
  const bool columns = layout.channels_inner();
  const int64_t blocks_per_range =
      columns ? ceil_div(layout.channels, kTileChannels) : layout.channels;
  // A range of the columns kernel covers kTileChannels values per row.
  const int64_t min_range = columns ? kMinRangeElements / kTileChannels : kMinRangeElements;
  const int64_t splits = std::clamp<int64_t>(
      std::min(ceil_div(target_blocks, blocks_per_range), layout.count() / min_range), 1,
      kMaxSplits);
  const int64_t range_length = ceil_div(layout.count(), splits);
  Tensor workspace = empty({splits * layout.channels * static_cast<int64_t>(sizeof(Result))},
                           TensorOptions(kUInt8).device(input.device()));
  auto* partial = static_cast<Result*>(workspace.data_ptr());
  const dim3 grid(checked_grid_x(blocks_per_range, "batch_norm"), static_cast<unsigned>(splits));
  if (columns) {
    reduce_columns_kernel<<<grid, dim3(kTileChannels, kTileRows), 0, context.stream>>>(
        reader, layout, range_length, partial);
  } else {
    reduce_planes_kernel<<<grid, kPlaneThreads, 0, context.stream>>>(reader, layout, range_length,
                                                                     partial);
  }
  MINIDL_LAUNCH_CHECK();
  const auto finalize_blocks = static_cast<unsigned>(ceil_div(layout.channels, kFinalizeThreads));
  finalize_channels_kernel<<<finalize_blocks, kFinalizeThreads, 0, context.stream>>>(
      reader, partial, layout.channels, splits, finish);
  MINIDL_LAUNCH_CHECK();
}

void batch_norm_statistics_kernel(const Tensor& mean, const Tensor& invstd,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& input, const norm::ChannelLayout& layout,
                                  double momentum, double eps) {
  if (layout.channels == 0) return;
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    reduce_channels(input, layout, MomentsReader<T>{input.data_ptr<T>(), {}},
                    FinishStatistics{mean.data_ptr<Acc>(), invstd.data_ptr<Acc>(),
                                     data_or_null(running_mean), data_or_null(running_var),
                                     static_cast<Acc>(eps), static_cast<Acc>(momentum)});
  });
}

void batch_norm_apply_kernel(const Tensor& out, const Tensor& input, const Tensor& mean,
                             const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                             const norm::ChannelLayout& layout) {
  const int64_t numel = layout.numel();
  if (numel == 0) return;
  LaunchContext context(input);
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    normalize_kernel<T>
        <<<elementwise_blocks(numel, context.device), kThreadsPerBlock, 0, context.stream>>>(
            out.data_ptr<T>(), input.data_ptr<T>(), mean.data_ptr<Acc>(), invstd.data_ptr<Acc>(),
            data_or_null(weight), data_or_null(bias), layout);
    MINIDL_LAUNCH_CHECK();
  });
}

void batch_norm_backward_reduce_kernel(const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                       const Tensor& grad_output, const Tensor& input,
                                       const Tensor& mean, const norm::ChannelLayout& layout) {
  if (layout.channels == 0) return;
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    reduce_channels(
        input, layout,
        GradSumsReader<T>{grad_output.data_ptr<T>(), input.data_ptr<T>(), mean.data_ptr<Acc>(), {}},
        FinishGradSums{sum_dy.data_ptr<Acc>(), sum_dy_xmu.data_ptr<Acc>()});
  });
}

void batch_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& invstd,
                                      const Tensor& weight, const Tensor& sum_dy,
                                      const Tensor& sum_dy_xmu, const norm::ChannelLayout& layout,
                                      norm::Statistics statistics) {
  const int64_t numel = layout.numel();
  if (numel == 0) return;
  LaunchContext context(input);
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    input_grad_kernel<T>
        <<<elementwise_blocks(numel, context.device), kThreadsPerBlock, 0, context.stream>>>(
            grad_input.data_ptr<T>(), grad_output.data_ptr<T>(), input.data_ptr<T>(),
            mean.data_ptr<Acc>(), invstd.data_ptr<Acc>(), data_or_null(weight),
            data_or_null(sum_dy), data_or_null(sum_dy_xmu), layout, statistics);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const NormKernels NormKernels::kCuda{
    .batch_norm_statistics = cuda::batch_norm_statistics_kernel,
    .batch_norm_apply = cuda::batch_norm_apply_kernel,
    .batch_norm_backward_reduce = cuda::batch_norm_backward_reduce_kernel,
    .batch_norm_backward_input = cuda::batch_norm_backward_input_kernel,
};

}  // namespace minidl
