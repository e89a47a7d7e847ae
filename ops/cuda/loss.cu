// CUDA kernels for softmax, log_softmax, cross_entropy and nll_loss (conventions in
// ops/loss_kernels.h). All arithmetic is in float; inputs and outputs keep their dtype.
//
// Row geometry, shared by the softmax-family kernels: a "row" is the C elements of one
// (outer, inner) pair, element c at base + c * inner. Threads of a block are (x: threads that
// share a row, y: rows):
// - inner > 1: one thread per row (x = 1), consecutive rows in consecutive threads, so the
//   loads of a warp are coalesced along inner;
// - inner == 1 and C <= kWarpRowLimit: one warp per row, kRowsPerWarpBlock rows per block;
// - inner == 1 and longer rows: one block of kBlockRowThreads per row.
// Row statistics (max, sums) are reduced with warp shuffles and, for whole-block rows, shared
// memory; every thread of the row ends up holding them.
//
// cross_entropy: the forward kernel computes each row's logsumexp and loss in one pass over
// the logits (three reads, one kernel); the backward kernel is element-wise, rebuilding
// softmax from the saved logsumexp. Rows whose target is ignore_index give 0;
// other out-of-range targets give NaN losses and gradients.
#include <cuda_runtime.h>

#include <cmath>

#include "minidl/core/cuda/block_reduce.cuh"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/loss_kernels.h"
#include "minidl/ops/loss_math.h"

namespace minidl::cuda {

namespace {

constexpr int64_t kWarpRowLimit = 1024;
constexpr int kRowsPerWarpBlock = 8;
constexpr int kBlockRowThreads = 512;
constexpr int kColumnRowsPerBlock = 256;

// ---- kernels ----

// The row statistics' merges, for row_all_reduce (core/cuda/block_reduce.cuh).
struct FloatMax {
  __device__ float identity() const { return -INFINITY; }
  __device__ float combine(float a, float b) const { return fmaxf(a, b); }
};
struct FloatSum {
  __device__ float identity() const { return 0.0f; }
  __device__ float combine(float a, float b) const { return a + b; }
};

struct RowGeometry {
  int64_t rows, classes, inner;
};

// The row this thread works on, or -1. Rows past the end only occur when blockDim.x <= 32,
// where returning early skips no __syncthreads.
__device__ __forceinline__ int64_t row_index(const RowGeometry& g) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  return row < g.rows ? row : -1;
}

__device__ __forceinline__ int64_t row_base(const RowGeometry& g, int64_t row) {
  return (row / g.inner) * g.classes * g.inner + row % g.inner;
}

// max_c x[c] and log(sum_c exp(x[c] - max)) of one row, in every thread of the row.
template <class T>
__device__ float2 row_max_and_log_sum_exp(const T* x, int64_t base, const RowGeometry& g) {
  float max = -INFINITY;
  for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
    max = fmaxf(max, static_cast<float>(x[base + c * g.inner]));
  max = row_all_reduce(FloatMax{}, max);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
    sum += expf(static_cast<float>(x[base + c * g.inner]) - max);
  sum = row_all_reduce(FloatSum{}, sum);
  return make_float2(max, logf(sum));
}

template <class T, bool kLog>
__global__ void softmax_forward_rows(T* out, const T* x, RowGeometry g) {
  const int64_t row = row_index(g);
  if (row < 0) return;
  const int64_t base = row_base(g, row);
  const float2 stats = row_max_and_log_sum_exp(x, base, g);
  for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x) {
    const int64_t at = base + c * g.inner;
    const float shifted = static_cast<float>(x[at]) - stats.x - stats.y;
    out[at] = static_cast<T>(kLog ? shifted : expf(shifted));
  }
}

// softmax: grad_input = y * (grad - sum(grad * y)); log_softmax: grad - exp(y) * sum(grad).
template <class T, bool kLog>
__global__ void softmax_backward_rows(T* grad_input, const T* grad, const T* y, RowGeometry g) {
  const int64_t row = row_index(g);
  if (row < 0) return;
  const int64_t base = row_base(g, row);
  float total = 0.0f;
  for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x) {
    const int64_t at = base + c * g.inner;
    total += kLog ? static_cast<float>(grad[at])
                  : static_cast<float>(grad[at]) * static_cast<float>(y[at]);
  }
  total = row_all_reduce(FloatSum{}, total);
  for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x) {
    const int64_t at = base + c * g.inner;
    const float out = static_cast<float>(grad[at]), output = static_cast<float>(y[at]);
    grad_input[at] = static_cast<T>(kLog ? out - expf(output) * total : output * (out - total));
  }
}

// logits [rows, classes] -> losses [rows], logsumexp [rows].
template <class T>
__global__ void cross_entropy_forward_rows(float* losses, float* logsumexp, const T* logits,
                                           const int64_t* target, int64_t ignore_index,
                                           float smoothing, RowGeometry g) {
  const int64_t row = row_index(g);
  if (row < 0) return;
  const int64_t base = row * g.classes;
  const float2 stats = row_max_and_log_sum_exp(logits, base, g);
  float logit_sum = 0.0f;
  if (smoothing != 0.0f) {
    for (int64_t c = threadIdx.x; c < g.classes; c += blockDim.x)
      logit_sum += static_cast<float>(logits[base + c]);
    logit_sum = row_all_reduce(FloatSum{}, logit_sum);
  }
  if (threadIdx.x != 0) return;
  const int64_t t = target[row];
  const float lse = stats.x + stats.y;
  logsumexp[row] = lse;
  if (t == ignore_index)
    losses[row] = 0.0f;
  else
    losses[row] = t >= 0 && t < g.classes
                      ? loss_math::smoothed_cross_entropy(lse, static_cast<float>(logits[base + t]),
                                                          logit_sum, smoothing, g.classes)
                      : NAN;
}

// grad_logits[i, c] = scale * grad[i] * (softmax[i, c] - (1 - s) [c == t_i] - s / C).
template <class T>
__global__ void cross_entropy_backward_elements(T* grad_logits, const T* grad, int64_t grad_stride,
                                                float scale, const T* logits, const int64_t* target,
                                                int64_t ignore_index, const float* logsumexp,
                                                float smoothing, int64_t rows, int64_t classes) {
  const int64_t numel = rows * classes;
  const float off_target = smoothing / static_cast<float>(classes);
  for (const int64_t k : grid_stride_range(numel)) {
    const int64_t i = k / classes, c = k % classes;
    const int64_t t = target[i];
    const float probability = expf(static_cast<float>(logits[k]) - logsumexp[i]);
    const float wanted = loss_math::smoothed_target(c == t, smoothing, off_target);
    const float row_grad = scale * static_cast<float>(grad[i * grad_stride]);
    const bool in_range = t >= 0 && t < classes;
    grad_logits[k] = static_cast<T>(t == ignore_index ? 0.0f
                                    : in_range        ? row_grad * (probability - wanted)
                                                      : NAN);
  }
}

template <class T>
__global__ void nll_loss_forward_elements(float* losses, const T* log_probs, const int64_t* target,
                                          int64_t ignore_index, int64_t rows, int64_t classes) {
  for (const int64_t i : grid_stride_range(rows)) {
    const int64_t t = target[i];
    const bool in_range = t >= 0 && t < classes;
    losses[i] = t == ignore_index ? 0.0f
                : in_range        ? -static_cast<float>(log_probs[i * classes + t])
                                  : NAN;
  }
}

template <class T>
__global__ void nll_loss_backward_elements(T* grad_log_probs, const T* grad, int64_t grad_stride,
                                           float scale, const int64_t* target, int64_t ignore_index,
                                           int64_t rows, int64_t classes) {
  const int64_t numel = rows * classes;
  for (const int64_t k : grid_stride_range(numel)) {
    const int64_t i = k / classes, c = k % classes;
    const int64_t t = target[i];
    const bool in_range = t >= 0 && t < classes;
    const float value =
        t == ignore_index
            ? 0.0f
            : (in_range ? (c == t ? -scale * static_cast<float>(grad[i * grad_stride]) : 0.0f)
                        : NAN);
    grad_log_probs[k] = static_cast<T>(value);
  }
}

// ---- launchers ----

// Grid-stride launches: enough blocks to fill the GPU, no more than the work needs.
// Block and grid for rows of `g`, as the note at the top describes.
void row_launch_shape(const RowGeometry& g, const char* op, dim3& grid, dim3& block) {
  if (g.inner > 1) {
    block = dim3(1, kColumnRowsPerBlock);
  } else if (g.classes <= kWarpRowLimit) {
    block = dim3(kWarpSize, kRowsPerWarpBlock);
  } else {
    block = dim3(kBlockRowThreads, 1);
  }
  grid = dim3(checked_grid_x(ceil_div(g.rows, block.y), op));
}

RowGeometry rows_of(const Tensor& x) {
  MINIDL_INTERNAL_ASSERT(x.dim() == 3 && (x.numel() == 0 || x.is_contiguous()),
                         "softmax kernels take a contiguous [outer, C, inner] tensor");
  return {x.size(0) * x.size(2), x.size(1), x.size(2)};
}

template <bool kLog>
void softmax_forward(const Tensor& out, const Tensor& x) {
  const char* op = kLog ? "log_softmax" : "softmax";
  const RowGeometry g = rows_of(x);
  if (g.rows == 0 || g.classes == 0) return;
  LaunchContext context(x);
  dim3 grid, block;
  row_launch_shape(g, op, grid, block);
  visit_device_floating(x.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    softmax_forward_rows<T, kLog>
        <<<grid, block, 0, context.stream>>>(out.data_ptr<T>(), x.data_ptr<T>(), g);
    MINIDL_LAUNCH_CHECK();
  });
}

template <bool kLog>
void softmax_backward(const Tensor& grad_input, const Tensor& grad, const Tensor& output) {
  const char* op = kLog ? "log_softmax" : "softmax";
  const RowGeometry g = rows_of(output);
  if (g.rows == 0 || g.classes == 0) return;
  LaunchContext context(output);
  dim3 grid, block;
  row_launch_shape(g, op, grid, block);
  visit_device_floating(output.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    softmax_backward_rows<T, kLog><<<grid, block, 0, context.stream>>>(
        grad_input.data_ptr<T>(), grad.data_ptr<T>(), output.data_ptr<T>(), g);
    MINIDL_LAUNCH_CHECK();
  });
}

void softmax_kernel(const Tensor& out, const Tensor& x) { softmax_forward<false>(out, x); }

void log_softmax_kernel(const Tensor& out, const Tensor& x) { softmax_forward<true>(out, x); }

void softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad, const Tensor& output) {
  softmax_backward<false>(grad_input, grad, output);
}

void log_softmax_backward_kernel(const Tensor& grad_input, const Tensor& grad,
                                 const Tensor& output) {
  softmax_backward<true>(grad_input, grad, output);
}

void cross_entropy_forward_kernel(const Tensor& losses, const Tensor& logsumexp,
                                  const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                  double label_smoothing) {
  const RowGeometry g{logits.size(0), logits.size(1), 1};
  if (g.rows == 0) return;
  LaunchContext context(logits);
  dim3 grid, block;
  row_launch_shape(g, "cross_entropy", grid, block);
  visit_device_floating(logits.dtype(), "cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_forward_rows<T><<<grid, block, 0, context.stream>>>(
        losses.data_ptr<float>(), logsumexp.data_ptr<float>(), logits.data_ptr<T>(),
        target.data_ptr<int64_t>(), ignore_index, static_cast<float>(label_smoothing), g);
    MINIDL_LAUNCH_CHECK();
  });
}

void cross_entropy_backward_kernel(const Tensor& grad_logits, const Tensor& grad_losses,
                                   double scale, const Tensor& logits, const Tensor& target,
                                   int64_t ignore_index, const Tensor& logsumexp,
                                   double label_smoothing) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  if (rows * classes == 0) return;
  LaunchContext context(logits);
  const unsigned blocks = elementwise_blocks(rows * classes, context.device);
  visit_device_floating(logits.dtype(), "cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_backward_elements<T><<<blocks, kThreadsPerBlock, 0, context.stream>>>(
        grad_logits.data_ptr<T>(), grad_losses.data_ptr<T>(), grad_losses.stride(0),
        static_cast<float>(scale), logits.data_ptr<T>(), target.data_ptr<int64_t>(), ignore_index,
        logsumexp.data_ptr<float>(), static_cast<float>(label_smoothing), rows, classes);
    MINIDL_LAUNCH_CHECK();
  });
}

void nll_loss_forward_kernel(const Tensor& losses, const Tensor& log_probs, const Tensor& target,
                             int64_t ignore_index) {
  const int64_t rows = log_probs.size(0), classes = log_probs.size(1);
  if (rows == 0) return;
  LaunchContext context(log_probs);
  const unsigned blocks = elementwise_blocks(rows, context.device);
  visit_device_floating(log_probs.dtype(), "nll_loss", [&](auto zero) {
    using T = decltype(zero);
    nll_loss_forward_elements<T><<<blocks, kThreadsPerBlock, 0, context.stream>>>(
        losses.data_ptr<float>(), log_probs.data_ptr<T>(), target.data_ptr<int64_t>(), ignore_index,
        rows, classes);
    MINIDL_LAUNCH_CHECK();
  });
}

void nll_loss_backward_kernel(const Tensor& grad_log_probs, const Tensor& grad_losses, double scale,
                              const Tensor& target, int64_t ignore_index) {
  const int64_t rows = grad_log_probs.size(0), classes = grad_log_probs.size(1);
  if (rows * classes == 0) return;
  LaunchContext context(grad_log_probs);
  const unsigned blocks = elementwise_blocks(rows * classes, context.device);
  visit_device_floating(grad_log_probs.dtype(), "nll_loss", [&](auto zero) {
    using T = decltype(zero);
    nll_loss_backward_elements<T><<<blocks, kThreadsPerBlock, 0, context.stream>>>(
        grad_log_probs.data_ptr<T>(), grad_losses.data_ptr<T>(), grad_losses.stride(0),
        static_cast<float>(scale), target.data_ptr<int64_t>(), ignore_index, rows, classes);
    MINIDL_LAUNCH_CHECK();
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const LossKernels LossKernels::kCuda{
    .softmax = cuda::softmax_kernel,
    .log_softmax = cuda::log_softmax_kernel,
    .softmax_backward = cuda::softmax_backward_kernel,
    .log_softmax_backward = cuda::log_softmax_backward_kernel,
    .cross_entropy_forward = cuda::cross_entropy_forward_kernel,
    .cross_entropy_backward = cuda::cross_entropy_backward_kernel,
    .nll_loss_forward = cuda::nll_loss_forward_kernel,
    .nll_loss_backward = cuda::nll_loss_backward_kernel,
};

}  // namespace minidl
