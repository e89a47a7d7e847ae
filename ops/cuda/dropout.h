#pragma once
// CUDA launcher of ops/dropout.h (defined in ops/cuda/dropout.cu), with the conventions of
// ops/cpu/dropout.h: contiguous tensors, element i masked by counter start.offset + i, so the
// mask equals the CPU's for the same generator state. Runs on the current stream of the
// tensors' device and never synchronises the host.
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl::cuda {

void dropout_kernel(const Tensor& out, const Tensor& input, double p, GeneratorState start);

}  // namespace minidl::cuda
