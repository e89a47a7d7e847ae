#pragma once
// The inputs of the double-backward tests (double_backward_test.cpp and
// double_backward_kernel_ops_test.cpp): the reference script's wiggly() sequences
// (tools/reference/make_double_backward_reference.py), so that both sides build the same tensors.
#include <functional>
#include <vector>

#include "minidl/core/tensor.h"
#include "test_util.h"

namespace minidl::double_backward_inputs {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// amplitude * sin(1 + phase + 0.37 i) + offset, float64 on the CPU.
inline Tensor wig(const Shape& sizes, double phase, double amplitude = 1.0, double offset = 0.0) {
  return testing::wiggly(sizes, kFloat64,
                         testing::Wiggle{.phase = phase, .amplitude = amplitude, .offset = offset});
}

// The same, as a leaf that requires grad.
inline Tensor leaf(const Shape& sizes, double phase, double amplitude = 1.0, double offset = 0.0) {
  return wig(sizes, phase, amplitude, offset).requires_grad_(true);
}

}  // namespace minidl::double_backward_inputs
