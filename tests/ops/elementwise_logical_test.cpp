// isnan, isinf, isfinite and the logical ops (ops/elementwise_logical.cpp) on the CPU: bool
// results in every dtype, with PyTorch's answers (torch.isinf(torch.tensor([1, 2])) is all false;
// NaN is true for the logical ops), broadcasting, mixed dtypes, layouts and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// [NaN, inf, -inf, 0, -2.5, 3]: every class of value, in each floating dtype.
Tensor special_values(DType dtype) {
  return tensor({std::nan(""), kInf, -kInf, 0.0, -2.5, 3.0}, kFloat64).to(dtype);
}

TEST(Classification, IsNanIsInfAndIsFiniteInEveryFloatingDtype) {
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = special_values(dtype);
    EXPECT_EQ(isnan(x).dtype(), kBool);
    EXPECT_EQ(to_vector<bool>(isnan(x)),
              (std::vector<bool>{true, false, false, false, false, false}));
    EXPECT_EQ(to_vector<bool>(isinf(x)),
              (std::vector<bool>{false, true, true, false, false, false}));
    EXPECT_EQ(to_vector<bool>(isfinite(x)),
              (std::vector<bool>{false, false, false, true, true, true}));
  }
}

TEST(Classification, IntegersAndBoolsAreFiniteAndNeverNaNOrInfinite) {
  for (DType dtype : {kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = tensor({0.0, 1.0, 7.0}, kFloat64).to(dtype);
    EXPECT_EQ(to_vector<bool>(isnan(x)), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(to_vector<bool>(isinf(x)), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(to_vector<bool>(isfinite(x)), (std::vector<bool>{true, true, true}));
  }
}

TEST(Logical, NotAndOrXorReadNonzeroAndNaNAsTrueInEveryDtype) {
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor a = tensor({0.0, 0.0, 1.0, 2.0}, kFloat64).to(dtype);
    const Tensor b = tensor({0.0, 5.0, 0.0, 1.0}, kFloat64).to(dtype);
    EXPECT_EQ(to_vector<bool>(logical_not(a)), (std::vector<bool>{true, true, false, false}));
    EXPECT_EQ(to_vector<bool>(logical_and(a, b)), (std::vector<bool>{false, false, false, true}));
    EXPECT_EQ(to_vector<bool>(logical_or(a, b)), (std::vector<bool>{false, true, true, true}));
    EXPECT_EQ(to_vector<bool>(logical_xor(a, b)), (std::vector<bool>{false, true, true, false}));
    EXPECT_EQ(logical_and(a, b).dtype(), kBool);
  }
  const Tensor nan = tensor({std::nan("")});
  EXPECT_EQ(to_vector<bool>(logical_not(nan)), (std::vector<bool>{false}));
  EXPECT_EQ(to_vector<bool>(logical_and(nan, nan)), (std::vector<bool>{true}));
}

TEST(Logical, OperandsBroadcastAndMayHaveDifferentDtypes) {
  // torch.logical_and(torch.tensor([1., 0.]), torch.tensor([2, 2])): [True, False].
  EXPECT_EQ(to_vector<bool>(logical_and(tensor({1.0, 0.0}), tensor(std::vector<int64_t>{2, 2}))),
            (std::vector<bool>{true, false}));
  const Tensor column = tensor({0.0, 1.0}).reshape({2, 1});
  const Tensor row = tensor({0.0, 1.0, 1.0}, kFloat64).to(kBool);
  const Tensor both = logical_or(column, row);
  EXPECT_EQ(both.sizes(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<bool>(both), (std::vector<bool>{false, true, true, true, true, true}));
  EXPECT_EQ(to_vector<bool>(logical_xor(column, row)),
            (std::vector<bool>{false, true, true, true, false, false}));
}

TEST(Logical, EveryLayoutGivesTheSameResult) {
  const Tensor x = testing::wiggly({2, 3, 4, 5}).sub(0.3).relu();  // zeros and nonzeros
  const Tensor y = testing::wiggly({2, 3, 4, 5}, 1.0).add(0.2).relu();
  const Tensor last_x = x.contiguous(MemoryFormat::ChannelsLast);
  const Tensor last_y = y.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_TRUE(logical_and(last_x, last_y).is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::bitwise_equal(logical_and(last_x, last_y), logical_and(x, y)));
  EXPECT_TRUE(
      testing::bitwise_equal(logical_not(x.transpose(1, 3)), logical_not(x).transpose(1, 3)));
  EXPECT_TRUE(testing::bitwise_equal(isfinite(last_x), isfinite(x)));
  EXPECT_EQ(isnan(x.narrow(0, 0, 0)).sizes(), (Shape{0, 3, 4, 5}));
  EXPECT_EQ(logical_or(x.narrow(0, 0, 0), y.narrow(0, 0, 0)).sizes(), (Shape{0, 3, 4, 5}));
}

TEST(Logical, ResultsAreNotDifferentiable) {
  const Tensor x = tensor({1.0, 0.0}, kFloat64).requires_grad_();
  EXPECT_FALSE(isnan(x).requires_grad());
  EXPECT_FALSE(logical_not(x).requires_grad());
  EXPECT_FALSE(logical_and(x, x).requires_grad());
}

TEST(Logical, ErrorsNameTheOp) {
  EXPECT_ERROR_CONTAINS(isnan(Tensor()), "isnan: argument 'input' is an undefined");
  EXPECT_ERROR_CONTAINS(isinf(Tensor()), "isinf: argument 'input' is an undefined");
  EXPECT_ERROR_CONTAINS(isfinite(Tensor()), "isfinite: argument 'input' is an undefined");
  EXPECT_ERROR_CONTAINS(logical_not(Tensor()), "logical_not: argument 'input' is an undefined");
  EXPECT_ERROR_CONTAINS(logical_and(zeros({2}), Tensor()),
                        "logical_and: argument 'other' is an undefined");
  EXPECT_ERROR_CONTAINS(logical_or(zeros({2, 3}), zeros({4})), "logical_or: shapes [2, 3] and [4]");
  EXPECT_ERROR_CONTAINS(logical_xor(zeros({2, 3}), zeros({4}, kInt64)),
                        "logical_xor: shapes [2, 3] and [4]");
}

TEST(Logical, TensorMethodsForwardToTheFunctions) {
  const Tensor x = special_values(kFloat32), y = tensor({1.0, 0.0, 0.0, 1.0, 0.0, 2.0});
  EXPECT_TRUE(testing::bitwise_equal(x.isnan(), isnan(x)));
  EXPECT_TRUE(testing::bitwise_equal(x.isinf(), isinf(x)));
  EXPECT_TRUE(testing::bitwise_equal(x.isfinite(), isfinite(x)));
  EXPECT_TRUE(testing::bitwise_equal(y.logical_not(), logical_not(y)));
  EXPECT_TRUE(testing::bitwise_equal(x.logical_and(y), logical_and(x, y)));
  EXPECT_TRUE(testing::bitwise_equal(x.logical_or(y), logical_or(x, y)));
  EXPECT_TRUE(testing::bitwise_equal(x.logical_xor(y), logical_xor(x, y)));
}

}  // namespace
}  // namespace minidl
