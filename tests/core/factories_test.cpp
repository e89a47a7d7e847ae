// linspace, logspace and eye (core/factories.h) against PyTorch's values bit for bit
// (tests/core/factory_reference.h, from tools/reference/make_factory_reference.py), and their
// errors.
#include "minidl/core/factories.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "factory_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

DType dtype_named(const std::string& name) {
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64})
    if (dtype_name(dtype) == name) return dtype;
  ADD_FAILURE() << "unknown dtype " << name;
  return kFloat32;
}

std::string describe(const testing::RangeReference& reference) {
  return std::string(reference.dtype) + " [" + std::to_string(reference.start) + ", " +
         std::to_string(reference.end) + "] in " + std::to_string(reference.steps) + " steps";
}

TEST(Factories, LinspaceMatchesPyTorchExactly) {
  for (const testing::RangeReference& reference : testing::kLinspaceReferences) {
    SCOPED_TRACE(describe(reference));
    const DType dtype = dtype_named(reference.dtype);
    const Tensor t = linspace(reference.start, reference.end, reference.steps, dtype);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.sizes(), (Shape{reference.steps}));
    EXPECT_EQ(to_vector<double>(t), reference.values);
  }
}

TEST(Factories, LogspaceMatchesPyTorchExactly) {
  for (const testing::RangeReference& reference : testing::kLogspaceReferences) {
    SCOPED_TRACE(describe(reference) + " base " + std::to_string(reference.base));
    const Tensor t = logspace(reference.start, reference.end, reference.steps, reference.base,
                              dtype_named(reference.dtype));
    EXPECT_EQ(to_vector<double>(t), reference.values);
  }
}

TEST(Factories, EyeMatchesPyTorch) {
  for (const testing::EyeReference& reference : testing::kEyeReferences) {
    SCOPED_TRACE(std::to_string(reference.n) + " x " + std::to_string(reference.m));
    const Tensor t = eye(reference.n, reference.m);
    EXPECT_EQ(t.sizes(), (Shape{reference.n, reference.m}));
    EXPECT_EQ(to_vector<double>(t), reference.values);
  }
  EXPECT_EQ(eye(3).sizes(), (Shape{3, 3}));
  EXPECT_EQ(to_vector<int64_t>(eye(2, -1, kInt64)), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_TRUE(eye(2, 2, TensorOptions(kFloat32).requires_grad(true)).requires_grad());
}

TEST(Factories, DefaultsAndErrors) {
  EXPECT_EQ(linspace(0, 1, 5).dtype(), kFloat32);
  EXPECT_EQ(logspace(0, 1, 5).dtype(), kFloat32);
  EXPECT_ERROR_CONTAINS(linspace(0, 1, -1), "linspace: number of steps must be non-negative");
  EXPECT_ERROR_CONTAINS(logspace(0, 1, -2), "logspace: number of steps must be non-negative");
  EXPECT_ERROR_CONTAINS(eye(-1), "eye: n must be non-negative, got -1");
  EXPECT_ERROR_CONTAINS(eye(2, -3), "eye: m must be non-negative, got -3");
}

}  // namespace
}  // namespace minidl
