// Matrix products on the CPU through oneDNN (ops/cpu/onednn_matmul.cpp): bfloat16 on CPUs with
// AVX-512 BF16, float32 on CPUs with AVX-512, each against the same products by OpenBLAS (oneDNN
// switched off), for plain, transposed, batched and broadcast operands, products cut along k
// (Note [Products split along k]), a column-major a copied row-major (Note [Column-major a]),
// linear with a bias, and gradients; the same bits at any thread count; and float16 as float32's
// product rounded once.
//
// Tolerances. Both paths sum the same float32 products over k <= 6001 in different orders. In
// bfloat16 they then round once: the float32 sums differ by far less than a bfloat16 ulp (2^-8
// relative), so the results are equal or one ulp apart where a sum lies near a rounding
// boundary; allowed 2^-7 relative. In float32 the two orders' errors are each about
// sqrt(k) * 2^-24 of the terms' magnitude (values here are below 1): allowed 1e-5 relative.
// Both with 1e-6 absolute for results near 0.
#include "minidl/ops/cpu/onednn_matmul.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
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

#define SKIP_WITHOUT_ONEDNN_GEMM(dtype)                                                \
  SKIP_WITHOUT_ONEDNN();                                                               \
  if (!cpu::onednn_gemm_enabled(dtype))                                                \
  GTEST_SKIP() << "this CPU lacks the instructions for oneDNN's " << dtype_name(dtype) \
               << " products (AVX-512, and AVX-512 BF16 for bfloat16): OpenBLAS takes them"

constexpr double kAbsolute = 1e-6;

double relative_tolerance(DType dtype) { return dtype == kBFloat16 ? 1.0 / 128 : 1e-5; }

class OnednnMatmul : public ::testing::TestWithParam<DType> {
 protected:
  Tensor values(const Shape& sizes, double phase) const {
    return wiggly(sizes, phase).to(GetParam());
  }
};

// f() with oneDNN on and off, which must agree.
template <class F>
void expect_onednn_matches_openblas(DType dtype, const std::string& what, const F& f) {
  SCOPED_TRACE(what);
  Tensor with_openblas;
  {
    const ScopedOnednn off(false);
    with_openblas = f();
  }
  const Tensor with_onednn = f();
  EXPECT_EQ(with_onednn.dtype(), dtype);
  EXPECT_EQ(with_onednn.sizes(), with_openblas.sizes());
  EXPECT_TRUE(all_close(with_onednn.to(kFloat32), with_openblas.to(kFloat32),
                        relative_tolerance(dtype), kAbsolute));
}

TEST_P(OnednnMatmul, ProductsMatchOpenBlasInEveryLayout) {
  SKIP_WITHOUT_ONEDNN_GEMM(GetParam());
  const DType dtype = GetParam();
  const Tensor a = values({37, 300}, 0.1), b = values({300, 45}, 0.2);
  expect_onednn_matches_openblas(dtype, "plain", [&] { return matmul(a, b); });
  expect_onednn_matches_openblas(dtype, "a transposed",
                                 [&] { return matmul(a.t().contiguous().t(), b); });
  expect_onednn_matches_openblas(dtype, "b transposed",
                                 [&] { return matmul(a, b.t().contiguous().t()); });
  expect_onednn_matches_openblas(dtype, "both transposed",
                                 [&] { return matmul(b.t(), a.t()); });  // [45, 300] @ [300, 37]
  const Tensor batch_a = values({3, 17, 64}, 0.3), batch_b = values({3, 64, 29}, 0.4);
  expect_onednn_matches_openblas(dtype, "batched", [&] { return matmul(batch_a, batch_b); });
  expect_onednn_matches_openblas(dtype, "batch times a shared matrix", [&] {
    return matmul(batch_a, values({64, 29}, 0.5));
  });
  expect_onednn_matches_openblas(dtype, "shared matrix times a batch", [&] {
    return matmul(values({17, 64}, 0.6), batch_b);
  });
  expect_onednn_matches_openblas(dtype, "4-d, as attention's scores", [&] {
    const Tensor q = values({2, 4, 33, 16}, 0.7), k = values({2, 4, 33, 16}, 0.8);
    return matmul(q, k.transpose(-2, -1));
  });
  // dW = dY^T X over a batch of tokens: oneDNN takes it with its JIT-compiled GEMM ("gemm:jit").
  expect_onednn_matches_openblas(dtype, "a weight gradient's form, k = 2048", [&] {
    return matmul(values({2048, 72}, 1.2).t(), values({2048, 40}, 1.3));
  });
  expect_onednn_matches_openblas(dtype, "linear with a bias", [&] {
    return linear(values({8, 21, 96}, 0.9), values({40, 96}, 1.0), values({40}, 1.1));
  });
  // A k past 8 chunks of 512: eight chunks of 751, the last of 744 (the partial products' memory
  // stays at eight outputs).
  expect_onednn_matches_openblas(dtype, "a weight gradient's form, k = 6001", [&] {
    return matmul(values({6001, 24}, 1.7).t(), values({6001, 16}, 1.8));
  });
  // Cut along k too, onto the bias already in the output (beta = 1).
  expect_onednn_matches_openblas(dtype, "linear with a bias, in_features 2100", [&] {
    return linear(values({6, 2100}, 1.4), values({30, 2100}, 1.5), values({30}, 1.6));
  });
}

TEST_P(OnednnMatmul, GradientsMatchOpenBlas) {
  SKIP_WITHOUT_ONEDNN_GEMM(GetParam());
  const auto gradients = [this](bool onednn) {
    const ScopedOnednn scope(onednn);
    const Tensor x = values({4, 9, 48}, 0.2).requires_grad_();
    const Tensor w = values({24, 48}, 0.3).requires_grad_();
    const Tensor bias = values({24}, 0.4).requires_grad_();
    linear(x, w, bias).sum().backward();
    return std::vector<Tensor>{x.grad(), w.grad(), bias.grad()};
  };
  const double relative = relative_tolerance(GetParam());
  const std::vector<Tensor> off = gradients(false), on = gradients(true);
  for (size_t i = 0; i < on.size(); ++i)
    EXPECT_TRUE(all_close(on[i].to(kFloat32), off[i].to(kFloat32), relative, kAbsolute)) << i;
}

TEST_P(OnednnMatmul, MakesItsPrimitivesOnceAndGivesTheSameBitsAtAnyThreadCount) {
  SKIP_WITHOUT_ONEDNN_GEMM(GetParam());
  // 256 x 512 x 192 multiply-adds (brgemm), and a weight gradient's form, a transposed a with
  // k = 4096 (gemm:jit): one block of rows on one thread, two on two.
  const std::vector<std::pair<Tensor, Tensor>> products = {
      {values({256, 512}, 0.1), values({512, 192}, 0.2)},
      {values({4096, 128}, 0.3).t(), values({4096, 192}, 0.4)}};
  for (const auto& [a, b] : products) {
    SCOPED_TRACE("a of shape " + std::to_string(a.size(0)) + " x " + std::to_string(a.size(1)));
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
}

// Note [Column-major a]: a weight gradient's a, read column-major, whose rows are cut into
// blocks: each block is copied row-major by a oneDNN reorder (an event of the profile) for
// brgemm, which gives the same bits at any thread count, and the product matches OpenBLAS's.
TEST_P(OnednnMatmul, CopiesAColumnMajorARowMajorForBrgemm) {
  SKIP_WITHOUT_ONEDNN_GEMM(GetParam());
  const Tensor a = values({700, 300}, 0.5).t(), b = values({700, 200}, 0.6);  // k = 700, not cut
  ASSERT_EQ(a.stride(0), 1);
  const auto reorders_in = [&](int64_t threads, Tensor& product) {
    const ScopedThreadCount scope(threads);
    const OpProfiler profiler;
    product = matmul(a, b);
    int64_t calls = 0;
    for (const OpProfiler::Record& event : profiler.events())
      if (event.name == "oneDNN reorder: matrix product operand") calls += event.calls;
    return calls;
  };
  Tensor one_thread, two_threads;
  // oneDNN's brgemm reads all 300 rows column-major as they are (no copy), but for 150 it offers
  // only gemm:jit: two threads' blocks are copied.
  EXPECT_EQ(reorders_in(1, one_thread), 0);
  EXPECT_EQ(reorders_in(2, two_threads), 2);
  EXPECT_TRUE(testing::bitwise_equal(one_thread, two_threads));
  expect_onednn_matches_openblas(GetParam(), "a column-major", [&] { return matmul(a, b); });
}

// A bfloat16 product without a bias is written by oneDNN in bfloat16 directly; with a bias it
// sums onto the bias in float32 and is cast after. Both round the same float32 sums once: with a
// bias of zeros, the same bits (rows cut into blocks, and k cut into chunks).
TEST(OnednnMatmulBFloat16, WritesTheFloat32SumsRoundedOnce) {
  SKIP_WITHOUT_ONEDNN_GEMM(kBFloat16);
  for (const int64_t in_features : {300, 2100}) {
    SCOPED_TRACE("in_features " + std::to_string(in_features));
    const Tensor x = wiggly({64, in_features}, 0.1).to(kBFloat16);
    const Tensor weight = wiggly({48, in_features}, 0.2).to(kBFloat16);
    Tensor rounded_by_onednn;
    {
      const OpProfiler profiler;
      rounded_by_onednn = linear(x, weight);
      for (const OpProfiler::Record& op : profiler.ops())
        EXPECT_NE(op.name, "to") << "the product was summed in float32 and cast";
    }
    const Tensor cast = linear(x, weight, zeros({48}, kBFloat16));
    EXPECT_EQ(rounded_by_onednn.dtype(), kBFloat16);
    EXPECT_TRUE(testing::bitwise_equal(rounded_by_onednn, cast));
  }
}

// float16 has no oneDNN product here: converted to float32, then multiplied as float32 is.
TEST(OnednnMatmulFloat16, IsTheFloat32ProductRoundedOnce) {
  const Tensor a = wiggly({16, 32}, 0.1).to(kFloat16), b = wiggly({32, 8}, 0.2).to(kFloat16);
  EXPECT_TRUE(
      testing::bitwise_equal(matmul(a, b), matmul(a.to(kFloat32), b.to(kFloat32)).to(kFloat16)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OnednnMatmul, ::testing::Values(kFloat32, kBFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace minidl
