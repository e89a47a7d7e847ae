#pragma once
// The kernel interface of GradScaler's unscale_ (optim/grad_scaler.h), implemented by
// optim/cpu/amp_kernel.cpp (a parallel loop per gradient) and optim/cuda/amp_kernel.cu (one
// multi-tensor launch per gradient dtype); dispatched by kernels_for (Note [Kernel tables] in
// core/dispatch.h). The math is in optim/amp_math.h. Conventions:
// - Gradients are dense (their elements fill numel() consecutive slots in some order) and
//   floating point: float32, float16 or bfloat16, and float64 on the CPU (it never reaches a
//   GPU). All are on scale's device.
// - scale and found_inf are one-element float32 tensors. found_inf is set to 1 when any
//   unscaled element is inf or NaN and is never cleared here: the caller zeroes it once per step.
// - CUDA kernels run on the current stream of the tensors' device and never wait for it.
// The scale update stays out of the table: on CUDA it also writes a host mirror of the skip
// counter, which GradScaler watches (optim/cpu/amp_kernel.h, optim/cuda/amp_kernel.h).
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl::optim {

struct AmpKernels {
  // Multiplies every gradient by 1 / scale in place and sets found_inf on inf or NaN.
  void (*unscale_and_check)(const std::vector<Tensor>& grads, const Tensor& scale,
                            const Tensor& found_inf);

  static const AmpKernels kCpu;
  static const AmpKernels kCuda;
};

}  // namespace minidl::optim
