#pragma once
// One tensor of PyTorch's numbers as a reference script writes it (values in row-major order
// and the shape), and the check that an op matches a case of such a script: its output and the
// gradients of sum(out * wiggly(out.shape, 1.0)) for float64 wiggly inputs, operand k with
// phase k (tools/reference/make_shape_ops_reference.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl::testing {

struct ReferenceEntry {
  std::vector<double> values;
  std::vector<int64_t> shape;
};

inline Tensor reference_tensor(const ReferenceEntry& entry) {
  return from_host(entry.values.data(), entry.shape, kFloat64);
}

using ReferenceFn = std::function<Tensor(const std::vector<Tensor>&)>;

// fn on float64 wiggly inputs of `shapes` against the script's output and gradients.
inline ::testing::AssertionResult matches_reference(const ReferenceFn& fn,
                                                    const std::vector<Shape>& shapes,
                                                    const ReferenceEntry& output,
                                                    const std::vector<ReferenceEntry>& grads,
                                                    double tolerance = 1e-12) {
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < shapes.size(); ++k)
    inputs.push_back(wiggly(shapes[k], static_cast<double>(k), kFloat64).requires_grad_());
  const Tensor out = fn(inputs);
  auto same = all_close(out, reference_tensor(output), tolerance, tolerance);
  if (!same) return same << " (output)";
  (out * wiggly(out.sizes(), 1.0, kFloat64)).sum().backward();
  for (size_t k = 0; k < grads.size(); ++k) {
    const Tensor grad = inputs[k].grad().defined() ? inputs[k].grad() : zeros_like(inputs[k]);
    same = all_close(grad, reference_tensor(grads[k]), tolerance, tolerance);
    if (!same) return same << " (gradient of operand " << k << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace minidl::testing
