#pragma once
// CUDA launchers of ops/random.h (defined in ops/cuda/random.cu), on the current stream.
// `out` is contiguous, floating point, not float64; element i draws from counter
// start.offset + i, exactly as the CPU kernels do (Note [Philox counters in minidl]).
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl::cuda {

void uniform_kernel(const Tensor& out, double low, double high, GeneratorState start);
void normal_kernel(const Tensor& out, double mean, double std, GeneratorState start);

}  // namespace minidl::cuda
