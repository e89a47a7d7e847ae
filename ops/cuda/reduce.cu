// CUDA reductions over a contiguous input viewed as [outer, reduce, inner] (see
// ops/reduce_kernels.h). The math comes from ops/reduce_math.h, shared with the CPU kernels.
//
// Conventions:
// - inner == 1 (rows): rows of up to kWarpRowLimit elements get one warp each, eight rows to a
//   block; longer rows get a block of kBlockRowThreads threads each, and when there are too few
//   rows to fill the GPU a row is also cut into splits (grid.y), one block per split.
// - inner > 1 (columns): a block covers kTileWidth neighbouring outputs (threadIdx.x, so reads
//   are coalesced) and kTileRows threads share each output's reduced range (threadIdx.y); when
//   there are too few tiles to fill the GPU the reduced range is cut into splits (grid.y).
// - With splits, each block writes its partial accumulator to a workspace laid out
//   [splits, outer * inner], and finalize_kernel merges them in split order.
// - Every merge happens in a fixed tree, so results are the same from run to run.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/reduce_kernels.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::cuda {

namespace {

using reduce_math::compute_t;

constexpr int64_t kWarpRowLimit = 1024;  // longer rows get a whole block
constexpr int kRowsPerWarpBlock = 8;
constexpr int kBlockRowThreads = 256;
constexpr int kTileWidth = 32;
constexpr int kTileRows = 8;
// A split reads at least this many elements, so splitting pays for its second pass.
constexpr int64_t kMinSplitElements = 4096;
constexpr int64_t kMaxSplits = 1024;
static_assert(kMaxSplits <= kMaxGridYZ, "the splits are the grid's y dimension");
// Blocks per multiprocessor we aim for before splitting rows or columns.
constexpr int64_t kTargetBlocksPerMultiprocessor = 4;

// ---- kernels ----

// in [outer, reduce]: block (x: threads of a row, y: rows), grid (row groups, splits).
template <class T, class Compute, class Op, class Store>
__global__ void reduce_rows_kernel(const T* in, int64_t outer, int64_t reduce, int64_t split_length,
                                   Op op, Store store, typename Op::Acc* partial) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= outer) return;  // only in warp mode, where no __syncthreads follows
  const int64_t begin = blockIdx.y * split_length;
  const int64_t end = min(reduce, begin + split_length);
  const T* data = in + row * reduce;
  typename Op::Acc acc = op.identity();
  for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
    acc = op.accumulate(acc, static_cast<Compute>(data[r]), r);
  acc = row_reduce(op, acc);
  if (threadIdx.x != 0) return;
  if (partial)
    partial[blockIdx.y * outer + row] = acc;
  else
    store(row, acc);
}

// in [outer, reduce, inner]: block (kTileWidth, kTileRows), grid (outer * tiles, splits).
template <class T, class Compute, class Op, class Store>
__global__ void reduce_columns_kernel(const T* in, int64_t outer, int64_t reduce, int64_t inner,
                                      int64_t tiles, int64_t split_length, Op op, Store store,
                                      typename Op::Acc* partial) {
  const int64_t o = blockIdx.x / tiles;
  const int64_t i = (blockIdx.x % tiles) * kTileWidth + threadIdx.x;
  const int64_t begin = blockIdx.y * split_length;
  const int64_t end = min(reduce, begin + split_length);
  typename Op::Acc acc = op.identity();
  if (i < inner)
    for (int64_t r = begin + threadIdx.y; r < end; r += blockDim.y)
      acc = op.accumulate(acc, static_cast<Compute>(in[(o * reduce + r) * inner + i]), r);
  acc = column_reduce<kTileWidth, kTileRows>(op, acc);
  if (threadIdx.y != 0 || i >= inner) return;
  const int64_t out = o * inner + i;
  if (partial)
    partial[blockIdx.y * outer * inner + out] = acc;
  else
    store(out, acc);
}

// partial [splits, outputs] -> store(output, merged), merging in split order.
template <class Op, class Store>
__global__ void finalize_kernel(const typename Op::Acc* partial, int64_t outputs, int64_t splits,
                                Op op, Store store) {
  for (const int64_t k : grid_stride_range(outputs)) {
    typename Op::Acc acc = partial[k];
    for (int64_t s = 1; s < splits; ++s) acc = op.combine(acc, partial[s * outputs + k]);
    store(k, acc);
  }
}

// grad_input [outer, reduce, inner] (zeroed before): grad_input[o, index[o, i], i] = grad[o, i].
template <class T>
__global__ void scatter_extreme_grad(T* grad_input, const T* grad, const int64_t* index,
                                     int64_t outputs, int64_t reduce, int64_t inner) {
  for (const int64_t k : grid_stride_range(outputs)) {
    const int64_t o = k / inner, i = k % inner;
    grad_input[(o * reduce + index[k]) * inner + i] = grad[k];
  }
}

// ---- stores: how an accumulator becomes output ----

template <class Out, class Acc>
struct SumStore {
  Out* out;
  Acc divisor;  // 1 for sum, the reduced count for mean
  __device__ void operator()(int64_t k, Acc acc) const { out[k] = static_cast<Out>(acc / divisor); }
};

template <class T, class Value>
struct VarStore {
  T* out;
  int64_t correction;
  __device__ void operator()(int64_t k, reduce_math::MomentsAcc<Value> acc) const {
    out[k] = static_cast<T>(reduce_math::MomentsOp<Value>::variance(acc, correction));
  }
};

template <class T, class Value>
struct ExtremeStore {
  T* values;         // may be null
  int64_t* indices;  // may be null
  __device__ void operator()(int64_t k, reduce_math::ValueIndex<Value> acc) const {
    if (values) values[k] = static_cast<T>(acc.value);
    if (indices) indices[k] = acc.index;
  }
};

// ---- launchers ----

// How many pieces to cut `length` into when only `blocks` blocks would run otherwise.
int64_t split_count(int64_t blocks, int64_t length, int64_t target_blocks) {
  if (blocks >= target_blocks) return 1;
  const int64_t wanted = ceil_div(target_blocks, std::max<int64_t>(blocks, 1));
  return std::clamp<int64_t>(std::min(wanted, length / kMinSplitElements), 1, kMaxSplits);
}

// Runs `op` over input [outer, reduce, inner], store(k, acc) writing output k of outer * inner.
// `name` is the op's name, for errors.
template <class T, class Compute, class Op, class Store>
void launch_reduce(const char* name, const Tensor& input, const Op& op, const Store& store) {
  using Acc = typename Op::Acc;
  MINIDL_INTERNAL_ASSERT(input.dim() == 3 && (input.numel() == 0 || input.is_contiguous()),
                         "reduction kernels take a contiguous [outer, reduce, inner] input");
  const int64_t outer = input.size(0), reduce = input.size(1), inner = input.size(2);
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  LaunchContext context(input);
  const int64_t target_blocks =
      kTargetBlocksPerMultiprocessor * multiprocessor_count(context.device);
  const T* in = static_cast<const T*>(input.data_ptr());

  int64_t splits = 1;
  dim3 grid, block;
  int64_t tiles = 0;
  if (inner == 1 && reduce <= kWarpRowLimit) {
    block = dim3(kWarpSize, kRowsPerWarpBlock);
    grid = dim3(checked_grid_x(ceil_div(outer, kRowsPerWarpBlock), name), 1);
  } else if (inner == 1) {
    splits = split_count(outer, reduce, target_blocks);
    block = dim3(kBlockRowThreads, 1);
    grid = dim3(checked_grid_x(outer, name), static_cast<unsigned>(splits));
  } else {
    tiles = ceil_div(inner, kTileWidth);
    splits = split_count(outer * tiles, reduce, target_blocks);
    block = dim3(kTileWidth, kTileRows);
    grid = dim3(checked_grid_x(outer * tiles, name), static_cast<unsigned>(splits));
  }
  const int64_t split_length = ceil_div(std::max<int64_t>(reduce, 1), splits);

  Tensor workspace;
  Acc* partial = nullptr;
  if (splits > 1) {
    const int64_t bytes = splits * outputs * static_cast<int64_t>(sizeof(Acc));
    workspace = empty({bytes}, TensorOptions(kUInt8).device(input.device()));
    partial = static_cast<Acc*>(workspace.data_ptr());
  }
  if (inner == 1) {
    reduce_rows_kernel<T, Compute>
        <<<grid, block, 0, context.stream>>>(in, outer, reduce, split_length, op, store, partial);
  } else {
    reduce_columns_kernel<T, Compute><<<grid, block, 0, context.stream>>>(
        in, outer, reduce, inner, tiles, split_length, op, store, partial);
  }
  MINIDL_LAUNCH_CHECK();
  if (splits > 1) {
    const unsigned blocks = grid_stride_blocks(outputs, kBlockRowThreads, target_blocks);
    finalize_kernel<<<blocks, kBlockRowThreads, 0, context.stream>>>(partial, outputs, splits, op,
                                                                     store);
    MINIDL_LAUNCH_CHECK();
  }
}

// float for floating inputs, int64 for integer and bool inputs.
template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, float>;
template <class T>
using sum_out_t = std::conditional_t<std::is_integral_v<T>, int64_t, T>;

// Sum, divided by the reduced count when `divide` (mean).
void sum_or_mean(const Tensor& out, const Tensor& input, bool divide) {
  visit_device_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Acc = sum_acc_t<T>;
    using Out = sum_out_t<T>;
    const Acc divisor = divide ? static_cast<Acc>(input.size(1)) : Acc(1);
    launch_reduce<T, Acc>(divide ? "mean" : "sum", input, reduce_math::SumOp<Acc>{},
                          SumStore<Out, Acc>{out.data_ptr<Out>(), divisor});
  });
}

template <bool kLargest>
void extreme(const Tensor& values, const Tensor& indices, const Tensor& input) {
  visit_device_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Compute = compute_t<T>;
    launch_reduce<T, Compute>(
        kLargest ? "max" : "min", input, reduce_math::ExtremeOp<Compute, kLargest>{},
        ExtremeStore<T, Compute>{values.defined() ? values.data_ptr<T>() : nullptr,
                                 indices.defined() ? indices.data_ptr<int64_t>() : nullptr});
  });
}

void sum_kernel(const Tensor& out, const Tensor& input) { sum_or_mean(out, input, false); }

void mean_kernel(const Tensor& out, const Tensor& input) { sum_or_mean(out, input, true); }

void var_kernel(const Tensor& out, const Tensor& input, int64_t correction) {
  visit_device_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      using Compute = compute_t<T>;
      launch_reduce<T, Compute>("var", input, reduce_math::MomentsOp<Compute>{},
                                VarStore<T, Compute>{out.data_ptr<T>(), correction});
    } else {
      MINIDL_INTERNAL_ASSERT(false, "var of a non-floating tensor reached the kernel");
    }
  });
}

void max_kernel(const Tensor& values, const Tensor& indices, const Tensor& input) {
  extreme<true>(values, indices, input);
}

void min_kernel(const Tensor& values, const Tensor& indices, const Tensor& input) {
  extreme<false>(values, indices, input);
}

void scatter_extreme_grad_kernel(const Tensor& grad_input, const Tensor& grad,
                                 const Tensor& indices) {
  const int64_t reduce = grad_input.size(1), inner = grad_input.size(2);
  const int64_t outputs = grad_input.size(0) * inner;
  LaunchContext context(grad_input);
  if (grad_input.numel() > 0)
    MINIDL_CUDA_CHECK(
        cudaMemsetAsync(grad_input.data_ptr(), 0, grad_input.nbytes(), context.stream));
  if (outputs == 0) return;
  visit_device_dtype(grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const unsigned blocks = resident_grid_stride_blocks(
          outputs, kBlockRowThreads, kTargetBlocksPerMultiprocessor, context.device);
      scatter_extreme_grad<T><<<blocks, kBlockRowThreads, 0, context.stream>>>(
          grad_input.data_ptr<T>(), grad.data_ptr<T>(), indices.data_ptr<int64_t>(), outputs,
          reduce, inner);
      MINIDL_LAUNCH_CHECK();
    } else {
      MINIDL_INTERNAL_ASSERT(false, "a gradient of a non-floating dtype");
    }
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const ReduceKernels ReduceKernels::kCuda{
    .sum = cuda::sum_kernel,
    .mean = cuda::mean_kernel,
    .var = cuda::var_kernel,
    .max = cuda::max_kernel,
    .min = cuda::min_kernel,
    .scatter_extreme_grad = cuda::scatter_extreme_grad_kernel,
};

}  // namespace minidl
