#pragma once
// Factories beyond those core/tensor.h declares (core/tensor.h is the Tensor class's header, and
// these need nothing of it but the type), with PyTorch's names and values; defined in
// core/factories.cpp. Computed on the host and copied to options.device(), so every device
// holds the same numbers.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// `steps` values from start to end inclusive, evenly spaced, as torch.linspace: the first half
// counted up from start, the second half down from end (so both ends are exact), each value
// start + step * i (or end - step * (steps - 1 - i)) rounded once, as PyTorch's CPU kernel
// computes it with a fused multiply-add, in the dtype's arithmetic (double for integer dtypes,
// then truncated; float for 16-bit dtypes, then rounded). float32 unless options say otherwise.
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
// base ^ (the linspace of exponents), as torch.logspace computes it on the CPU: the exponents
// in double from start and end in the dtype, the power in double, then rounded to the dtype.
Tensor logspace(double start, double end, int64_t steps, double base = 10.0,
                TensorOptions options = {});
// The n x m identity (m = -1: n x n), as torch.eye.
Tensor eye(int64_t n, int64_t m = -1, TensorOptions options = {});

}  // namespace minidl
