// The operator table (tests/ops/op_table.h) on CUDA: every row's values and gradients equal the
// CPU's, within a few ulps of the computing type (CUDA's libm differs from glibc's by an ulp or
// two), in float32, bfloat16 and float16, and in a channels-last layout; the binary rows also
// with a broadcast operand. Then the bool-valued ops (isnan ... logical_xor) against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "minidl/minidl.h"
#include "op_table.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::reference_tensor;
using testing::UnaryRow;

class UnaryOpTableCuda : public ::testing::TestWithParam<UnaryRow> {};

TEST_P(UnaryOpTableCuda, ValuesAndGradientMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const testing::UnaryReference* r = testing::unary_reference(GetParam().name);
  ASSERT_NE(r, nullptr);
  const std::pair<DType, std::pair<double, double>> cases[] = {
      {kFloat32, {1e-6, 4e-6}}, {kBFloat16, {1e-3, 8e-3}}, {kFloat16, {1e-4, 1e-3}}};
  for (const auto& [dtype, tolerance] : cases) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = reference_tensor(r->input, dtype).contiguous(MemoryFormat::ChannelsLast);
    const Tensor cpu_leaf = x.detach().requires_grad_();
    const Tensor cuda_leaf = x.cuda().detach().requires_grad_();
    const Tensor cpu_out = GetParam().op(cpu_leaf), cuda_out = GetParam().op(cuda_leaf);
    EXPECT_TRUE(cuda_out.is_cuda());
    EXPECT_TRUE(cuda_out.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(all_close(cuda_out.cpu(), cpu_out, tolerance.first, tolerance.second));
    const Tensor upstream = reference_tensor(r->grad, dtype);  // any fixed values will do
    cpu_out.backward(upstream);
    cuda_out.backward(upstream.cuda());
    EXPECT_TRUE(
        all_close(cuda_leaf.grad().cpu(), cpu_leaf.grad(), tolerance.first * 10, tolerance.second));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, UnaryOpTableCuda, ::testing::ValuesIn(testing::unary_rows()),
                         [](const auto& info) { return info.param.name; });

class BinaryOpTableCuda : public ::testing::TestWithParam<testing::BinaryRow> {};

TEST_P(BinaryOpTableCuda, ValuesAndGradientsMatchTheCpuWithABroadcastOperand) {
  SKIP_WITHOUT_CUDA();
  const testing::BinaryReference* r = testing::binary_reference(GetParam().name);
  ASSERT_NE(r, nullptr);
  const std::pair<DType, std::pair<double, double>> cases[] = {
      {kFloat32, {1e-6, 4e-6}}, {kBFloat16, {1e-3, 8e-3}}, {kFloat16, {1e-4, 1e-3}}};
  for (const auto& [dtype, tolerance] : cases) {
    for (const bool broadcast : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (broadcast ? ", broadcast" : ""));
      const Tensor a = reference_tensor(r->input, dtype).contiguous(MemoryFormat::ChannelsLast);
      const Tensor full_b = reference_tensor(r->other, dtype);
      // [1, 3, 2, 2] against [2, 3, 2, 2]: the second operand read with a zero stride.
      const Tensor b = broadcast ? full_b.narrow(0, 1, 1).contiguous() : full_b;
      const Tensor cpu_a = a.detach().requires_grad_(), cpu_b = b.detach().requires_grad_();
      const Tensor cuda_a = a.cuda().detach().requires_grad_();
      const Tensor cuda_b = b.cuda().detach().requires_grad_();
      const Tensor cpu_out = GetParam().op(cpu_a, cpu_b);
      const Tensor cuda_out = GetParam().op(cuda_a, cuda_b);
      EXPECT_TRUE(cuda_out.is_cuda());
      EXPECT_TRUE(all_close(cuda_out.cpu(), cpu_out, tolerance.first, tolerance.second));
      const Tensor upstream = reference_tensor(r->grad_input, dtype);  // any fixed values do
      cpu_out.backward(upstream);
      cuda_out.backward(upstream.cuda());
      EXPECT_TRUE(
          all_close(cuda_a.grad().cpu(), cpu_a.grad(), tolerance.first * 10, tolerance.second));
      EXPECT_TRUE(
          all_close(cuda_b.grad().cpu(), cpu_b.grad(), tolerance.first * 10, tolerance.second));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, BinaryOpTableCuda, ::testing::ValuesIn(testing::binary_rows()),
                         [](const auto& info) { return info.param.name; });

TEST(BoolValuedOpsCuda, ClassificationAndLogicMatchTheCpuInEveryDtype) {
  SKIP_WITHOUT_CUDA();
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor values = tensor({std::nan(""), inf, -inf, 0.0, -2.5, 3.0, 0.0, 1.0}, kFloat64);
  const Tensor others = tensor({0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 1.0, 1.0}, kFloat64);
  const Tensor integers = tensor({0.0, 3.0, 1.0, 0.0, 2.0, 0.0, 7.0, 1.0}, kFloat64);
  using Predicate = Tensor (*)(const Tensor&);
  using Logical = Tensor (*)(const Tensor&, const Tensor&);
  for (DType dtype : {kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    // Integer and bool dtypes get finite values only (a NaN's conversion is undefined).
    const Tensor x = (is_floating_point(dtype) ? values : integers).to(dtype).reshape({2, 4});
    const Tensor y = others.to(dtype).reshape({2, 4});
    for (const Predicate op :
         {Predicate(isnan), Predicate(isinf), Predicate(isfinite), Predicate(logical_not)}) {
      const Tensor on_gpu = op(x.cuda());
      EXPECT_TRUE(on_gpu.is_cuda());
      EXPECT_EQ(to_vector<bool>(on_gpu.cpu()), to_vector<bool>(op(x)));
    }
    for (const Logical op : {Logical(logical_and), Logical(logical_or), Logical(logical_xor)}) {
      EXPECT_EQ(to_vector<bool>(op(x.cuda(), y.cuda()).cpu()), to_vector<bool>(op(x, y)));
      // Broadcast, with a second dtype.
      const Tensor column = y.narrow(1, 0, 1).to(kFloat32);
      EXPECT_EQ(to_vector<bool>(op(x.cuda(), column.cuda()).cpu()), to_vector<bool>(op(x, column)));
    }
  }
}

}  // namespace
}  // namespace minidl
