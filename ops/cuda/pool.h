#pragma once
// CUDA launchers of ops/pool.h (defined in ops/cuda/pool.cu), with the conventions of
// ops/cpu/pool.h: 4-D tensors of any strides, outputs overwritten through their strides,
// int64 argmax positions h * W + w. Each launcher runs on the current stream of the tensors'
// device, never synchronises the host, and uses no atomics (results repeat exactly).
// float64 tensors never reach these (they exist on the CPU only).
#include "minidl/core/tensor.h"
#include "minidl/ops/pool_math.h"

namespace minidl::cuda {

void max_pool2d_kernel(const Tensor& out, const Tensor& indices, const Tensor& input,
                       const pool::Window2d& window);
void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const pool::Window2d& window,
                       bool count_include_pad);
void adaptive_avg_pool2d_kernel(const Tensor& out, const Tensor& input,
                                const pool::Adaptive2d& window);

// grad_input [N, C, H, W] from grad_output [N, C, out_h, out_w].
void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const Tensor& indices, const pool::Window2d& window);
void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                const pool::Window2d& window, bool count_include_pad);
void adaptive_avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_output,
                                         const pool::Adaptive2d& window);

}  // namespace minidl::cuda
