// CUDA batch normalisation. The math is that of ops/norm_math.h, shared with the CPU.
//
// Conventions:
// - Per-channel reductions (batch statistics forward, gradient sums backward) run in two
//   launches. The first cuts each channel's M = N * S values into `splits` ranges and folds
//   each (channel, range) into a partial accumulator in a workspace laid out [splits, C]; the
//   second merges a channel's partials and finishes it (mean, invstd and the running statistics
//   update, or the two gradient sums). Without host synchronisation, without atomics, and in a
//   fixed tree, so results repeat exactly. The merge is itself a columns reduction over the
//   [splits, C] partials (kFinalizeRows threads per channel, then a tree): one thread per channel
//   walking up to 1024 partials in a chain of dependent loads took 2.67 ms of ResNet-18's 12.9 ms
//   bf16 step on an H200 (docs/benchmarks.md).
// - The first launch takes one of three shapes, chosen for coalesced reads (planes, columns and
//   column vectors: ops/cuda/batch_norm_reduction_plan.h, which also cuts the ranges).
// - Element-wise passes (normalise forward, grad_input backward) walk the elements in memory
//   order, 16 bytes to an access (core/cuda/vector_access.h) where every operand is aligned
//   and vectors keep to channels (norm::ChannelLayout::vectors_fit), else one at a time; a
//   vector finds its first element's channel from the layout and its lanes' from that.
// - batch_norm_relu's epilogue (relu(y + residual)) runs in the normalising pass, and its
//   backward reads relu's mask with the gradient in both backward passes (ops/norm_math.h).
//
// cuDNN's batch norm is the opt-in alternative (ops/cuda/batch_norm_cudnn.h); which is faster
// has not been measured yet (docs/gpu.md, "Not run on a GPU yet").
#include <cuda_runtime.h>

#include <algorithm>
#include <initializer_list>
#include <type_traits>

#include "minidl/core/cuda/aligned_vector.cuh"
#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/core/cuda/vector_access.h"
#include "minidl/ops/cuda/batch_norm_reduction_plan.h"
#include "minidl/ops/norm_kernels.h"

namespace minidl::cuda {

namespace {

// Statistics and sums in float (float64 never reaches the GPU).
using Acc = float;

constexpr int kFinalizeRows = 32;  // threads merging one channel's partials
constexpr int kFinalizeThreads = kTileChannels * kFinalizeRows;
constexpr int kVectorThreads = kVectorColumns * kVectorRows;
static_assert(kMaxSplits <= kMaxGridYZ, "the splits are the grid's y dimension");

// Vector v of `data` (elements v * Width ...), or zeros where `data` is null (an optional
// operand, which the lanes then do not read).
template <int Width, class T>
__device__ __forceinline__ AlignedVector<T, Width> load_vector_or_zeros(const T* data, int64_t v) {
  return data ? load_vector<Width>(data, v) : AlignedVector<T, Width>{};
}

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
  // Vector v, whose lanes are channels first_channel, first_channel + 1, ...
  template <int Width>
  __device__ void accumulate_vector(Result (&acc)[Width], int64_t v, int64_t) const {
    const AlignedVector<T, Width> in = load_vector<Width>(x, v);
#pragma unroll
    for (int lane = 0; lane < Width; ++lane)
      acc[lane] = op.accumulate(acc[lane], static_cast<Acc>(in.values[lane]), 0);
  }
  __device__ Result combine(Result a, Result b) const { return op.combine(a, b); }
};

// Folds (dy, x) pairs into sum(dy) and sum(dy * (x - mean)) (backward); dy masked by relu's
// backward where relu_output is not null.
template <class T>
struct GradSumsReader {
  using Result = norm::GradSums<Acc>;
  const T* grad_output;
  const T* x;
  const T* relu_output;
  const Acc* mean;
  norm::GradSumsOp<Acc> op;
  __device__ Result identity() const { return op.identity(); }
  __device__ Result accumulate(Result acc, int64_t offset, int64_t c) const {
    const Acc dy = static_cast<Acc>(grad_output[offset]);
    return op.accumulate(
        acc, relu_output ? norm::relu_passed(dy, static_cast<Acc>(relu_output[offset])) : dy,
        static_cast<Acc>(x[offset]), mean[c]);
  }
  template <int Width>
  __device__ void accumulate_vector(Result (&acc)[Width], int64_t v, int64_t first_channel) const {
    const AlignedVector<T, Width> dy = load_vector<Width>(grad_output, v);
    const AlignedVector<T, Width> in = load_vector<Width>(x, v);
    const AlignedVector<T, Width> mask = load_vector_or_zeros<Width>(relu_output, v);
#pragma unroll
    for (int lane = 0; lane < Width; ++lane) {
      const Acc grad = static_cast<Acc>(dy.values[lane]);
      acc[lane] = op.accumulate(
          acc[lane],
          relu_output ? norm::relu_passed(grad, static_cast<Acc>(mask.values[lane])) : grad,
          static_cast<Acc>(in.values[lane]), mean[first_channel + lane]);
    }
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
                                     ChannelReductionPlan plan, typename Reader::Result* partial) {
  const int64_t c = blockIdx.x;
  const int64_t end = plan.range_end(blockIdx.y, layout.count());
  typename Reader::Result acc = reader.identity();
  for (int64_t k = plan.range_begin(blockIdx.y) + threadIdx.x; k < end; k += blockDim.x) {
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
                                      ChannelReductionPlan plan, typename Reader::Result* partial) {
  using Result = typename Reader::Result;
  const int64_t c = plan.first_channel(blockIdx.x, threadIdx.x);
  const int64_t end = plan.range_end(blockIdx.y, layout.count());
  Result acc = reader.identity();
  if (c < layout.channels)
    for (int64_t m = plan.range_begin(blockIdx.y) + threadIdx.y; m < end; m += kTileRows)
      acc = reader.accumulate(acc, m * layout.channels + c, c);
  acc = column_reduce<kTileChannels, kTileRows>(reader, acc);
  if (threadIdx.y != 0 || c >= layout.channels) return;
  partial[blockIdx.y * layout.channels + c] = acc;
}

// Channels innermost, C a multiple of Width and every operand aligned to Width elements: thread
// (x, y) of block (tile, split) folds Width neighbouring channels from one vector per row, rows
// begin + y, begin + y + kVectorRows, ...; then each lane's rows merge in a tree. Block
// (kVectorColumns, kVectorRows); grid (tiles of kVectorColumns vectors, splits).
// The plan keeps kReductionBlocksPerMultiprocessor blocks to a multiprocessor; the bounds hold
// the registers to what lets them all be resident (ptxas gave 72 for bfloat16 moments without).
template <int Width, class Reader>
__global__ void __launch_bounds__(kVectorThreads, kReductionBlocksPerMultiprocessor)
    reduce_column_vectors_kernel(Reader reader, norm::ChannelLayout layout,
                                 ChannelReductionPlan plan, typename Reader::Result* partial) {
  using Result = typename Reader::Result;
  const int64_t first_channel = plan.first_channel(blockIdx.x, threadIdx.x);
  const bool folds = first_channel < layout.channels;
  Result acc[Width];
#pragma unroll
  for (int lane = 0; lane < Width; ++lane) acc[lane] = reader.identity();
  if (folds) {
    const int64_t vectors_per_row = layout.channels / Width;
    const int64_t column = first_channel / Width;
    const int64_t end = plan.range_end(blockIdx.y, layout.count());
    // Unrolled so that several rows' loads are in flight at once (nothing in the loop stores).
#pragma unroll 2
    for (int64_t m = plan.range_begin(blockIdx.y) + threadIdx.y; m < end; m += kVectorRows)
      reader.template accumulate_vector<Width>(acc, m * vectors_per_row + column, first_channel);
  }
#pragma unroll
  for (int lane = 0; lane < Width; ++lane) {
    const Result merged = column_tree_reduce<kVectorColumns, kVectorRows>(reader, acc[lane]);
    if (threadIdx.y == 0 && folds)
      partial[blockIdx.y * layout.channels + first_channel + lane] = merged;
  }
}

// partial [splits, C] -> finish(c, merged). Block (kTileChannels, kFinalizeRows); grid
// (channel tiles). Thread (x, y) merges splits y, y + kFinalizeRows, ... of its channel in
// order, then the rows merge in a tree.
template <class Reader, class Finish>
__global__ void __launch_bounds__(kFinalizeThreads)
    finalize_channels_kernel(Reader reader, const typename Reader::Result* partial,
                             int64_t channels, int64_t splits, Finish finish) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileChannels + threadIdx.x;
  typename Reader::Result acc = reader.identity();
  if (c < channels)
    for (int64_t s = threadIdx.y; s < splits; s += kFinalizeRows)
      acc = reader.combine(acc, partial[s * channels + c]);
  acc = column_tree_reduce<kTileChannels, kFinalizeRows>(reader, acc);
  if (threadIdx.y == 0 && c < channels) finish(c, acc);
}

// ---- element-wise kernels ----

// y = normalize(x), then with `relu` relu(y + residual) (residual null without relu), for every
// element in memory order, Width elements to an access.
template <int Width, class T>
__global__ void normalize_kernel(T* y, const T* x, const T* residual, bool relu, const Acc* mean,
                                 const Acc* invstd, const Acc* weight, const Acc* bias,
                                 norm::ChannelLayout layout) {
  for (const int64_t v : grid_stride_range(layout.numel() / Width)) {
    const AlignedVector<T, Width> in = load_vector<Width>(x, v);
    const AlignedVector<T, Width> addend = load_vector_or_zeros<Width>(residual, v);
    const int64_t first_channel = layout.channel_of(v * Width);
    AlignedVector<T, Width> out;
#pragma unroll
    for (int lane = 0; lane < Width; ++lane) {
      const int64_t c = layout.lane_channel(first_channel, lane);
      out.values[lane] =
          static_cast<T>(norm::normalize(static_cast<Acc>(in.values[lane]), mean[c], invstd[c],
                                         weight ? weight[c] : Acc(1), bias ? bias[c] : Acc(0)));
      if (residual)
        out.values[lane] = norm::add_rounded<Acc>(out.values[lane], addend.values[lane]);
      if (relu) out.values[lane] = norm::relu_rounded<Acc>(out.values[lane]);
    }
    store_vector<Width>(y, v, out);
  }
}

// grad_input by norm::input_grad, dy masked by relu's backward where relu_output is not null,
// Width elements to an access.
template <int Width, class T>
__global__ void input_grad_kernel(T* grad_input, const T* grad_output, const T* x,
                                  const T* relu_output, const Acc* mean, const Acc* invstd,
                                  const Acc* weight, const Acc* sum_dy, const Acc* sum_dy_xmu,
                                  norm::ChannelLayout layout, norm::Statistics statistics) {
  const bool batch = statistics == norm::Statistics::Batch;
  for (const int64_t v : grid_stride_range(layout.numel() / Width)) {
    const AlignedVector<T, Width> dy = load_vector<Width>(grad_output, v);
    const AlignedVector<T, Width> in = load_vector<Width>(x, v);
    const AlignedVector<T, Width> mask = load_vector_or_zeros<Width>(relu_output, v);
    const int64_t first_channel = layout.channel_of(v * Width);
    AlignedVector<T, Width> out;
#pragma unroll
    for (int lane = 0; lane < Width; ++lane) {
      const int64_t c = layout.lane_channel(first_channel, lane);
      const Acc grad = static_cast<Acc>(dy.values[lane]);
      const Acc passed =
          relu_output ? norm::relu_passed(grad, static_cast<Acc>(mask.values[lane])) : grad;
      out.values[lane] = static_cast<T>(
          norm::input_grad(statistics, passed, static_cast<Acc>(in.values[lane]), mean[c],
                           invstd[c], weight ? weight[c] : Acc(1), batch ? sum_dy[c] : Acc(0),
                           batch ? sum_dy_xmu[c] : Acc(0), layout.count()));
    }
    store_vector<Width>(grad_input, v, out);
  }
}

// ---- launchers ----

// A tensor's data, or null for an undefined (optional) one.
template <class T = Acc>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Elements of T per access for a pass over `layout` whose operands are `data` (null: absent):
// 16 bytes of T when vectors keep to channels and every operand is aligned to them, else 1.
template <class T>
int vector_width_for(const norm::ChannelLayout& layout, std::initializer_list<const T*> data) {
  constexpr int kWidth = vector_width(sizeof(T));
  const bool vectors =
      layout.vectors_fit(kWidth) && std::all_of(data.begin(), data.end(), [](const T* operand) {
        return !operand || vector_aligned(operand, kWidth, sizeof(T));
      });
  return vectors ? kWidth : 1;
}

// Calls launch(width), width a std::integral_constant<int, elements per access> (as
// vector_width_for), for an element-wise pass of T over `layout` whose operands are `data`.
template <class T, class Launch>
void launch_with_vector_width(const norm::ChannelLayout& layout,
                              std::initializer_list<const T*> data, const Launch& launch) {
  constexpr int kWidth = vector_width(sizeof(T));
  if (vector_width_for<T>(layout, data) == kWidth)
    launch(std::integral_constant<int, kWidth>{});
  else
    launch(std::integral_constant<int, 1>{});
}

// Reduces every channel of `layout` with `reader`, whose operands of T are `data`, then calls
// finish(c, result) per channel (see the conventions at the top).
template <class T, class Reader, class Finish>
void reduce_channels(const Tensor& input, const norm::ChannelLayout& layout, const Reader& reader,
                     std::initializer_list<const T*> data, const Finish& finish) {
  using Result = typename Reader::Result;
  LaunchContext context(input);
  const ChannelReductionPlan plan = plan_channel_reduction(
      layout, vector_width_for<T>(layout, data), multiprocessor_count(context.device));
  Tensor workspace = empty({plan.splits * layout.channels * static_cast<int64_t>(sizeof(Result))},
                           TensorOptions(kUInt8).device(input.device()));
  auto* partial = static_cast<Result*>(workspace.data_ptr());
  const dim3 grid(checked_grid_x(plan.channel_blocks, "batch_norm"),
                  static_cast<unsigned>(plan.splits));
  switch (plan.shape) {
    case ChannelReductionShape::kPlanes:
      reduce_planes_kernel<<<grid, kPlaneThreads, 0, context.stream>>>(reader, layout, plan,
                                                                       partial);
      break;
    case ChannelReductionShape::kColumns:
      reduce_columns_kernel<<<grid, dim3(kTileChannels, kTileRows), 0, context.stream>>>(
          reader, layout, plan, partial);
      break;
    case ChannelReductionShape::kColumnVectors: {
      constexpr int kWidth = vector_width(sizeof(T));
      MINIDL_INTERNAL_ASSERT(plan.width == kWidth, "batch_norm: a column-vector plan of width ",
                             plan.width, " for vectors of ", kWidth);
      reduce_column_vectors_kernel<kWidth>
          <<<grid, dim3(kVectorColumns, kVectorRows), 0, context.stream>>>(reader, layout, plan,
                                                                           partial);
      break;
    }
  }
  MINIDL_LAUNCH_CHECK();
  const auto finalize_blocks = static_cast<unsigned>(ceil_div(layout.channels, kTileChannels));
  finalize_channels_kernel<<<finalize_blocks, dim3(kTileChannels, kFinalizeRows), 0,
                             context.stream>>>(reader, partial, layout.channels, plan.splits,
                                               finish);
  MINIDL_LAUNCH_CHECK();
}

void batch_norm_statistics_kernel(const Tensor& mean, const Tensor& invstd,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& input, const norm::ChannelLayout& layout,
                                  double momentum, double eps) {
  if (layout.channels == 0) return;
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    const T* x = input.data_ptr<T>();
    reduce_channels<T>(input, layout, MomentsReader<T>{x, {}}, {x},
                       FinishStatistics{mean.data_ptr<Acc>(), invstd.data_ptr<Acc>(),
                                        data_or_null(running_mean), data_or_null(running_var),
                                        static_cast<Acc>(eps), static_cast<Acc>(momentum)});
  });
}

void batch_norm_apply_kernel(const Tensor& out, const Tensor& input, const Tensor& mean,
                             const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                             const norm::ChannelLayout& layout, const Tensor& residual, bool relu) {
  const int64_t numel = layout.numel();
  if (numel == 0) return;
  LaunchContext context(input);
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    T* y = out.data_ptr<T>();
    const T* x = input.data_ptr<T>();
    const T* residual_data = relu ? data_or_null<T>(residual) : nullptr;
    launch_with_vector_width<T>(layout, {y, x, residual_data}, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      normalize_kernel<kWidth, T><<<elementwise_blocks(numel / kWidth, context.device),
                                    kThreadsPerBlock, 0, context.stream>>>(
          y, x, residual_data, relu, mean.data_ptr<Acc>(), invstd.data_ptr<Acc>(),
          data_or_null(weight), data_or_null(bias), layout);
      MINIDL_LAUNCH_CHECK();
    });
  });
}

void batch_norm_backward_reduce_kernel(const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                       const Tensor& grad_output, const Tensor& input,
                                       const Tensor& mean, const norm::ChannelLayout& layout,
                                       const Tensor& relu_output) {
  if (layout.channels == 0) return;
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = grad_output.data_ptr<T>();
    const T* x = input.data_ptr<T>();
    const T* relu_data = data_or_null<T>(relu_output);
    reduce_channels<T>(input, layout, GradSumsReader<T>{dy, x, relu_data, mean.data_ptr<Acc>(), {}},
                       {dy, x, relu_data},
                       FinishGradSums{sum_dy.data_ptr<Acc>(), sum_dy_xmu.data_ptr<Acc>()});
  });
}

void batch_norm_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                      const Tensor& input, const Tensor& mean, const Tensor& invstd,
                                      const Tensor& weight, const Tensor& sum_dy,
                                      const Tensor& sum_dy_xmu, const norm::ChannelLayout& layout,
                                      norm::Statistics statistics, const Tensor& relu_output) {
  const int64_t numel = layout.numel();
  if (numel == 0) return;
  LaunchContext context(input);
  visit_device_floating(input.dtype(), "batch_norm", [&](auto zero) {
    using T = decltype(zero);
    T* dx = grad_input.data_ptr<T>();
    const T* dy = grad_output.data_ptr<T>();
    const T* x = input.data_ptr<T>();
    const T* relu_data = data_or_null<T>(relu_output);
    launch_with_vector_width<T>(layout, {dx, dy, x, relu_data}, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      input_grad_kernel<kWidth, T><<<elementwise_blocks(numel / kWidth, context.device),
                                     kThreadsPerBlock, 0, context.stream>>>(
          dx, dy, x, relu_data, mean.data_ptr<Acc>(), invstd.data_ptr<Acc>(), data_or_null(weight),
          data_or_null(sum_dy), data_or_null(sum_dy_xmu), layout, statistics);
      MINIDL_LAUNCH_CHECK();
    });
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
