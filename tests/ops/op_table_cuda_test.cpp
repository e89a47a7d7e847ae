// The operator table (tests/ops/op_table.h) on CUDA: every row's values and gradient equal the
// CPU's, within a few ulps of the computing type (CUDA's libm differs from glibc's by an ulp or
// two), in float32, bfloat16 and float16, and in a channels-last layout.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace minidl
