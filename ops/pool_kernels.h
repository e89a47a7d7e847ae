#pragma once
// The kernel interface of ops/pool.h, implemented by ops/cpu/pool.cpp (parallel over the N * C
// planes) and ops/cuda/pool.cu; dispatched by kernels_for (Note [Kernel tables] in
// core/dispatch.h). Conventions:
// - Every tensor is 4-D [N, C, H, W] and may have any strides; outputs are written through
//   their strides (the op layer creates them in the input's memory format) and overwritten.
// - indices: int64 [N, C, out_h, out_w], position h * W + w of each window's maximum.
// - The window geometry comes from ops/pool_math.h; its sizes match the tensors'.
// - No atomics, so results repeat exactly. CUDA kernels run on the current stream of the
//   tensors' device and never synchronise the host; float64 never reaches them.
#include "minidl/core/tensor.h"
#include "minidl/ops/pool_math.h"

namespace minidl {

struct PoolKernels {
  void (*max_pool2d)(const Tensor& out, const Tensor& indices, const Tensor& input,
                     const pool::Window2d& window);
  void (*avg_pool2d)(const Tensor& out, const Tensor& input, const pool::Window2d& window,
                     bool count_include_pad);
  void (*adaptive_avg_pool2d)(const Tensor& out, const Tensor& input,
                              const pool::Adaptive2d& window);

  // grad_input [N, C, H, W] from grad_output [N, C, out_h, out_w].
  void (*max_pool2d_backward)(const Tensor& grad_input, const Tensor& grad_output,
                              const Tensor& indices, const pool::Window2d& window);
  void (*avg_pool2d_backward)(const Tensor& grad_input, const Tensor& grad_output,
                              const pool::Window2d& window, bool count_include_pad);
  void (*adaptive_avg_pool2d_backward)(const Tensor& grad_input, const Tensor& grad_output,
                                       const pool::Adaptive2d& window);

  static const PoolKernels kCpu;
  static const PoolKernels kCuda;
};

}  // namespace minidl
