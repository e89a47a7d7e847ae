// bfloat16 matrix products on the CPU through oneDNN (ops/cpu/onednn_matmul.cpp), on CPUs with
// AVX-512 BF16: against the same products summed in float32 by OpenBLAS (oneDNN switched off),
// for plain, transposed, batched and broadcast operands, linear with a bias, and gradients; the
// same bits at any thread count; and float16 and a CPU without the instructions staying on the
// conversion.
//
// Tolerance. Both paths sum the same float32 products of bfloat16 values over k <= 300 in
// different orders and round once to bfloat16: the float32 sums differ by far less than a
// bfloat16 ulp (2^-8 relative), so the results are equal or one ulp apart where a sum lies near
// a rounding boundary. Allowed: 2^-7 relative, plus 1e-6 absolute for results near 0.
#include "minidl/ops/cpu/onednn_matmul.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/minidl.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::ScopedOnednn;
using testing::ScopedThreadCount;
using testing::wiggly;

#define SKIP_WITHOUT_BFLOAT16_GEMM()                                                  \
  SKIP_WITHOUT_ONEDNN();                                                              \
  if (!cpu::onednn_bfloat16_gemm_enabled())                                           \
  GTEST_SKIP() << "this CPU has no AVX-512 BF16: bfloat16 products are converted to " \
                  "float32 for OpenBLAS"

constexpr double kRelative = 1.0 / 128, kAbsolute = 1e-6;

Tensor bf16(const Shape& sizes, double phase) { return wiggly(sizes, phase).to(kBFloat16); }

// f() with oneDNN on and off, which must agree.
template <class F>
void expect_onednn_matches_openblas(const std::string& what, const F& f) {
  SCOPED_TRACE(what);
  Tensor with_openblas;
  {
    const ScopedOnednn off(false);
    with_openblas = f();
  }
  const Tensor with_onednn = f();
  EXPECT_EQ(with_onednn.dtype(), kBFloat16);
  EXPECT_EQ(with_onednn.sizes(), with_openblas.sizes());
  EXPECT_TRUE(
      all_close(with_onednn.to(kFloat32), with_openblas.to(kFloat32), kRelative, kAbsolute));
}

TEST(OnednnMatmul, BFloat16ProductsMatchOpenBlasInEveryLayout) {
  SKIP_WITHOUT_BFLOAT16_GEMM();
  const Tensor a = bf16({37, 300}, 0.1), b = bf16({300, 45}, 0.2);
  expect_onednn_matches_openblas("plain", [&] { return matmul(a, b); });
  expect_onednn_matches_openblas("a transposed", [&] { return matmul(a.t().contiguous().t(), b); });
  expect_onednn_matches_openblas("b transposed", [&] { return matmul(a, b.t().contiguous().t()); });
  expect_onednn_matches_openblas("both transposed",
                                 [&] { return matmul(b.t(), a.t()); });  // [45, 300] @ [300, 37]
  const Tensor batch_a = bf16({3, 17, 64}, 0.3), batch_b = bf16({3, 64, 29}, 0.4);
  expect_onednn_matches_openblas("batched", [&] { return matmul(batch_a, batch_b); });
  expect_onednn_matches_openblas("batch times a shared matrix", [&] {
    return matmul(batch_a, bf16({64, 29}, 0.5));
  });
  expect_onednn_matches_openblas("shared matrix times a batch", [&] {
    return matmul(bf16({17, 64}, 0.6), batch_b);
  });
  expect_onednn_matches_openblas("4-d, as attention's scores", [&] {
    const Tensor q = bf16({2, 4, 33, 16}, 0.7), k = bf16({2, 4, 33, 16}, 0.8);
    return matmul(q, k.transpose(-2, -1));
  });
  expect_onednn_matches_openblas("linear with a bias", [&] {
    return linear(bf16({8, 21, 96}, 0.9), bf16({40, 96}, 1.0), bf16({40}, 1.1));
  });
}

TEST(OnednnMatmul, BFloat16GradientsMatchOpenBlas) {
  SKIP_WITHOUT_BFLOAT16_GEMM();
  const auto gradients = [](bool onednn) {
    const ScopedOnednn scope(onednn);
    const Tensor x = bf16({4, 9, 48}, 0.2).requires_grad_();
    const Tensor w = bf16({24, 48}, 0.3).requires_grad_();
    const Tensor bias = bf16({24}, 0.4).requires_grad_();
    linear(x, w, bias).sum().backward();
    return std::vector<Tensor>{x.grad(), w.grad(), bias.grad()};
  };
  const std::vector<Tensor> off = gradients(false), on = gradients(true);
  for (size_t i = 0; i < on.size(); ++i)
    EXPECT_TRUE(all_close(on[i].to(kFloat32), off[i].to(kFloat32), kRelative, kAbsolute)) << i;
}

TEST(OnednnMatmul, MakesItsPrimitivesOnceAndGivesTheSameBitsAtAnyThreadCount) {
  SKIP_WITHOUT_BFLOAT16_GEMM();
  // 256 x 512 x 192 multiply-adds: one block of rows on one thread, two on two.
  const Tensor a = bf16({256, 512}, 0.1), b = bf16({512, 192}, 0.2);
  const int64_t before = onednn_primitives_created();
  Tensor one_thread;
  {
    const ScopedThreadCount threads(1);
    one_thread = matmul(a, b);
  }
  EXPECT_GT(onednn_primitives_created(), before) << "the product did not run on oneDNN";
  const ScopedThreadCount threads(2);
  const Tensor first = matmul(a, b);
  const int64_t made = onednn_primitives_created();
  const Tensor again = matmul(a, b);
  EXPECT_EQ(onednn_primitives_created(), made) << "a second product of these shapes made more";
  EXPECT_TRUE(testing::bitwise_equal(first, again));
  EXPECT_TRUE(testing::bitwise_equal(first, one_thread));
}

TEST(OnednnMatmul, Float16StaysOnTheConversion) {
  SKIP_WITHOUT_BFLOAT16_GEMM();
  const Tensor a = wiggly({16, 32}, 0.1).to(kFloat16), b = wiggly({32, 8}, 0.2).to(kFloat16);
  const int64_t made = onednn_primitives_created();
  const Tensor product = matmul(a, b);
  EXPECT_EQ(onednn_primitives_created(), made);
  EXPECT_TRUE(all_close(product.to(kFloat32),
                        matmul(a.to(kFloat32), b.to(kFloat32)).to(kFloat16).to(kFloat32), 0, 0));
}

}  // namespace
}  // namespace minidl
