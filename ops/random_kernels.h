#pragma once
// The kernel interface of ops/random.h, implemented by ops/cpu/random.cpp and
// ops/cuda/random.cu; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// `out` is contiguous and floating point; element i draws from counter start.offset + i (Note
// [Philox counters in minidl], core/philox.h), so both backends give the same values for the
// same generator state. CUDA kernels run on the current stream.
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl {

struct RandomKernels {
  void (*uniform)(const Tensor& out, double low, double high, GeneratorState start);
  void (*normal)(const Tensor& out, double mean, double std, GeneratorState start);

  static const RandomKernels kCpu;
  static const RandomKernels kCuda;
};

}  // namespace minidl
