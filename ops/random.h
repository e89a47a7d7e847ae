#pragma once
// Random tensors from the global Philox-4x32-10 generator: element i of a call draws from
// counter (offset + i) under the seed, so the same seed gives the same values on CPU and CUDA.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

void manual_seed(uint64_t seed);

Tensor rand(const Shape& sizes, TensorOptions options = {});   // uniform [0, 1)
Tensor randn(const Shape& sizes, TensorOptions options = {});  // standard normal
// In place: uniform in [low, high) and normal(mean, std), for nn::init.
Tensor& uniform_(Tensor& t, double low = 0, double high = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);

}  // namespace minidl
