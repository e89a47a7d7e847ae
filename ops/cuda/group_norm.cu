// CUDA group normalisation. The math is that of ops/group_norm_math.h and
// ops/layer_norm_math.h, shared with the CPU.
//
// Conventions:
// - The forward pass and grad_input are the row kernels it shares with layer norm
//   (ops/cuda/normalize_rows.cuh), on the (sample, group) rows of C / G * S values, each
//   element under its channel's weight and bias.
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
#include "minidl/ops/cuda/normalize_rows.cuh"
#include "minidl/ops/group_norm_kernels.h"
#include "minidl/ops/reduce_math.h"

namespace minidl::cuda {

namespace {

using normalize_rows::Acc;
using normalize_rows::data_or_null;

constexpr int kChannelThreads = 256;

// ---- kernels ----

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

void group_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                        const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const group_norm_math::GroupLayout& layout, double eps) {
  normalize_rows::forward(out, mean, rstd, input, weight, bias, layout.rows(), eps,
                          group_norm_math::ChannelParameter{layout}, "group_norm");
}

void group_norm_backward_input(const Tensor& grad_input, const Tensor& grad_output,
                               const Tensor& input, const Tensor& mean, const Tensor& rstd,
                               const Tensor& weight, const group_norm_math::GroupLayout& layout) {
  normalize_rows::backward_input(grad_input, grad_output, input, mean, rstd, weight, layout.rows(),
                                 group_norm_math::ChannelParameter{layout}, "group_norm");
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
