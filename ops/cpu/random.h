#pragma once
// CPU kernels of ops/random.h. `out` is contiguous and floating point; element i draws from
// counter start.offset + i (Note [Philox counters in minidl], core/philox.h).
#include "minidl/core/generator.h"
#include "minidl/core/tensor.h"

namespace minidl::cpu {

void uniform_kernel(const Tensor& out, double low, double high, GeneratorState start);
void normal_kernel(const Tensor& out, double mean, double std, GeneratorState start);

}  // namespace minidl::cpu
