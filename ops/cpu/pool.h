#pragma once
// CPU kernels of ops/pool.h, parallel over the N * C planes. Conventions (shared with
// ops/cuda/pool.h):
// - Every tensor is 4-D [N, C, H, W] and may have any strides; outputs are written through
//   their strides (the op layer creates them in the input's memory format) and overwritten.
// - indices: int64 [N, C, out_h, out_w], position h * W + w of each window's maximum.
// - The window geometry comes from ops/pool_math.h; its sizes match the tensors'.
#include "minidl/core/tensor.h"
#include "minidl/ops/pool_math.h"

namespace minidl::cpu {

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

}  // namespace minidl::cpu
