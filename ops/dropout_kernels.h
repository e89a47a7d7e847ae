#pragma once
// The kernel interface of ops/dropout.h, implemented by ops/cpu/dropout.cpp and
// ops/cuda/dropout.cu; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// `out` and `input` are contiguous floating-point tensors of the same shape; out[i] =
// input[i] / (1 - p) when element i survives (counter start.offset + i under start.seed,
// ops/dropout_math.h), else 0, so both backends draw the same mask for the same generator
// state. Backward runs the kernel again on the gradient with the forward's `start`, which
// reproduces the mask. The CUDA kernel runs on the current stream of the tensors' device and
// never synchronises the host.
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl {

struct DropoutKernels {
  void (*dropout)(const Tensor& out, const Tensor& input, double p, GeneratorState start);

  static const DropoutKernels kCpu;
  static const DropoutKernels kCuda;
};

}  // namespace minidl
