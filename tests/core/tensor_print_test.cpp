// Tensor::str() (core/tensor_print.cpp) against PyTorch's str() of the same tensors, character
// for character (tests/core/print_reference.h, from tools/reference/make_print_reference.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise.h"
#include "print_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

DType dtype_named(const std::string& name) {
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool})
    if (dtype_name(dtype) == name) return dtype;
  ADD_FAILURE() << "unknown dtype " << name;
  return kFloat32;
}

Tensor build(const testing::PrintReference& reference) {
  std::vector<double> values = reference.values;
  if (values.empty()) {
    int64_t numel = 1;
    for (int64_t size : reference.shape) numel *= size;
    for (int64_t i = 0; i < numel; ++i) values.push_back(reference.start + i * reference.step);
  }
  Tensor t = from_host(values.data(), reference.shape, kFloat64).to(dtype_named(reference.dtype));
  if (reference.requires_grad) t.requires_grad_();
  return t;
}

TEST(TensorPrint, MatchesPyTorchExactly) {
  ASSERT_GE(testing::print_references().size(), 25u);
  for (const testing::PrintReference& reference : testing::print_references()) {
    SCOPED_TRACE(reference.name);
    EXPECT_EQ(build(reference).str(), reference.expected);
  }
}

TEST(TensorPrint, Int64IsExactPastDoublePrecision) {
  const std::vector<int64_t> extremes = {std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min() + 1};
  EXPECT_EQ(tensor(extremes).str(), "tensor([ 9223372036854775807, -9223372036854775807])");
}

TEST(TensorPrint, NonContiguousViewsPrintTheirOwnOrder) {
  const Tensor t = arange(6, kFloat32).view({2, 3}).t();
  EXPECT_EQ(t.str(), "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])");
}

TEST(TensorPrint, GradFnAndUndefined) {
  const Tensor x = tensor({1.0, 2.0}).requires_grad_();
  const std::string printed = (x * 2.0).str();
  EXPECT_EQ(printed.rfind("tensor([2., 4.], grad_fn=<", 0), 0u) << printed;
  EXPECT_EQ(Tensor().str(), "[ undefined Tensor ]");
}

}  // namespace
}  // namespace minidl
