// scaled_dot_product_attention on CUDA against the CPU: forward and backward with and without
// masks (boolean, additive, broadcast), causal with T < S and T > S, lengths beside the tiles,
// head dims up to the kernels' 256, float32 and the 16-bit dtypes; the dropout mask entry by
// entry; the backward repeating bit for bit; the CUDA-only errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/generator.h"
#include "minidl/ops/attention.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::wiggly;

// [T, S]: key j takes part for query i unless (3i + 5j) % 7 == 0; row 1 sees no key.
Tensor boolean_mask(int64_t query_length, int64_t key_length) {
  std::vector<uint8_t> keep;
  for (int64_t i = 0; i < query_length; ++i)
    for (int64_t j = 0; j < key_length; ++j) keep.push_back((3 * i + 5 * j) % 7 != 0 && i != 1);
  return from_host(keep.data(), {query_length, key_length}, kUInt8).to(kBool);
}

// [B, 1, T, S] additive: 0.5 sin(0.7 k), -inf where (i + 2j) % 5 == 0.
Tensor additive_mask(int64_t batch, int64_t query_length, int64_t key_length, DType dtype) {
  std::vector<double> values;
  for (int64_t k = 0; k < batch * query_length * key_length; ++k) {
    const int64_t i = k / key_length % query_length, j = k % key_length;
    values.push_back((i + 2 * j) % 5 == 0 ? -std::numeric_limits<double>::infinity()
                                          : 0.5 * std::sin(0.7 * k));
  }
  return from_host(values.data(), {batch, 1, query_length, key_length}, kFloat64).to(dtype);
}

struct ParityCase {
  const char* name;
  int64_t batch, heads, query_length, key_length, head_dim, value_dim;
  const char* mask;  // "none", "boolean", "additive"
  bool is_causal;
  double dropout_p;
};

struct Results {
  Tensor out, grad_query, grad_key, grad_value;
};

Results run(const ParityCase& c, DType dtype, bool on_cuda) {
  auto place = [&](const Tensor& t) { return on_cuda ? t.cuda() : t; };
  Tensor q = place(wiggly({c.batch, c.heads, c.query_length, c.head_dim}, 0.0, dtype))
                 .detach()
                 .requires_grad_();
  Tensor k = place(wiggly({c.batch, c.heads, c.key_length, c.head_dim}, 1.0, dtype))
                 .detach()
                 .requires_grad_();
  Tensor v = place(wiggly({c.batch, c.heads, c.key_length, c.value_dim}, 2.0, dtype))
                 .detach()
                 .requires_grad_();
  const Tensor upstream =
      place(wiggly({c.batch, c.heads, c.query_length, c.value_dim}, 3.0, dtype));
  Tensor mask;
  if (std::string(c.mask) == "boolean") mask = place(boolean_mask(c.query_length, c.key_length));
  if (std::string(c.mask) == "additive")
    mask = place(additive_mask(c.batch, c.query_length, c.key_length, dtype));
  manual_seed(2024);
  Tensor out = scaled_dot_product_attention(q, k, v, mask, c.dropout_p, c.is_causal);
  sum(mul(out, upstream)).backward();
  return {out.detach().cpu(), q.grad().cpu(), k.grad().cpu(), v.grad().cpu()};
}

class AttentionCudaParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(AttentionCudaParity, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  const ParityCase& c = GetParam();
  for (DType dtype : {kFloat32, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Results cpu = run(c, dtype, false);
    const Results gpu = run(c, dtype, true);
    EXPECT_EQ(gpu.out.dtype(), dtype);
    // Both accumulate in float32 but sum in different orders (and CUDA's expf differs from
    // glibc's by an ulp or two); 16-bit results may then round to neighbouring values.
    const double atol = dtype == kFloat32 ? 2e-5 : dtype == kFloat16 ? 5e-3 : 3e-2;
    const double rtol = dtype == kFloat32 ? 1e-4 : dtype == kFloat16 ? 5e-3 : 2e-2;
    // In 16 bits the default choice runs cuDNN or the tensor cores where they fit, which round
    // the probabilities to the dtype for their products: the gradients then get the normwise
    // allowance of their own tests (attention_tensor_cores_cases.h's expect_matches).
    const double unit_roundoff = dtype == kFloat16 ? 0x1p-11 : dtype == kBFloat16 ? 0x1p-8 : 0.0;
    const auto gradient_close = [&](const Tensor& gradient, const Tensor& reference) {
      const double largest = reference.numel() == 0 ? 0.0 : max(abs(reference)).item<double>();
      return all_close(gradient, reference, atol + 8 * unit_roundoff * largest, rtol);
    };
    EXPECT_TRUE(all_close(gpu.out, cpu.out, atol, rtol)) << "out";
    EXPECT_TRUE(gradient_close(gpu.grad_query, cpu.grad_query)) << "grad_query";
    EXPECT_TRUE(gradient_close(gpu.grad_key, cpu.grad_key)) << "grad_key";
    EXPECT_TRUE(gradient_close(gpu.grad_value, cpu.grad_value)) << "grad_value";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionCudaParity,
    ::testing::Values(
        // The CUDA tiles are 8 queries by 32 keys; the CPU's 16 by 64.
        ParityCase{"OneElement", 1, 1, 1, 1, 1, 1, "none", false, 0.0},
        ParityCase{"Plain", 2, 2, 5, 7, 8, 6, "none", false, 0.0},
        ParityCase{"RaggedTiles", 2, 3, 37, 131, 16, 24, "none", false, 0.0},
        ParityCase{"CausalMoreKeys", 2, 2, 37, 131, 64, 64, "none", true, 0.0},
        ParityCase{"CausalMoreQueries", 1, 2, 100, 30, 32, 16, "none", true, 0.0},
        ParityCase{"BooleanMask", 2, 2, 33, 70, 8, 12, "boolean", false, 0.0},
        ParityCase{"AdditiveMask", 2, 3, 17, 65, 32, 8, "additive", false, 0.0},
        ParityCase{"Dropout", 2, 2, 19, 67, 8, 8, "none", false, 0.3},
        ParityCase{"DropoutCausal", 1, 3, 45, 45, 16, 16, "none", true, 0.5},
        ParityCase{"OddHeadDims", 1, 2, 9, 40, 5, 3, "boolean", false, 0.1},
        ParityCase{"WideHeads", 1, 2, 20, 50, 128, 128, "none", true, 0.0},
        ParityCase{"WidestHeads", 1, 1, 12, 40, 256, 256, "none", false, 0.2},
        ParityCase{"NoKeys", 1, 2, 5, 0, 4, 3, "none", false, 0.0},
        ParityCase{"NoValueFeatures", 1, 2, 5, 6, 4, 0, "none", false, 0.0}),
    [](const ::testing::TestParamInfo<ParityCase>& info) { return info.param.name; });

TEST(AttentionCuda, DropoutDropsTheSameEntriesAsTheCpu) {
  SKIP_WITHOUT_CUDA();
  // With value = the identity ([S, S]), out is the dropped probability matrix itself: its zeros
  // are the dropped entries, which must be the same on both devices.
  const int64_t T = 40, S = 70;
  const Tensor q = wiggly({2, 3, T, 16}, 0.0);
  const Tensor k = wiggly({2, 3, S, 16}, 1.0);
  std::vector<float> eye(static_cast<size_t>(S * S), 0.0f);
  for (int64_t j = 0; j < S; ++j) eye[static_cast<size_t>(j * S + j)] = 1.0f;
  const Tensor v = from_host(eye.data(), {S, S}, kFloat32).expand({2, 3, S, S}).contiguous();
  manual_seed(31);
  const Tensor cpu = scaled_dot_product_attention(q, k, v, {}, 0.4);
  const GeneratorState after_cpu = default_generator().state();
  manual_seed(31);
  const Tensor gpu = scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), {}, 0.4).cpu();
  EXPECT_EQ(default_generator().state(), after_cpu);
  const std::vector<float> cpu_values = to_vector<float>(cpu), gpu_values = to_vector<float>(gpu);
  int64_t dropped = 0;
  for (size_t e = 0; e < cpu_values.size(); ++e) {
    ASSERT_EQ(cpu_values[e] == 0.0f, gpu_values[e] == 0.0f) << "entry " << e;
    dropped += cpu_values[e] == 0.0f;
  }
  const double fraction = static_cast<double>(dropped) / static_cast<double>(cpu_values.size());
  EXPECT_NEAR(fraction, 0.4, 0.03);
  EXPECT_TRUE(all_close(gpu, cpu, 1e-6, 1e-4));
}

TEST(AttentionCuda, BackwardRepeatsBitForBit) {
  SKIP_WITHOUT_CUDA();
  const ParityCase c{"Repeat", 2, 4, 70, 150, 64, 64, "none", true, 0.1};
  for (DType dtype : {kFloat32, kBFloat16}) {
    const Results first = run(c, dtype, true), second = run(c, dtype, true);
    EXPECT_TRUE(bitwise_equal(first.out, second.out)) << dtype;
    EXPECT_TRUE(bitwise_equal(first.grad_query, second.grad_query)) << dtype;
    EXPECT_TRUE(bitwise_equal(first.grad_key, second.grad_key)) << dtype;
    EXPECT_TRUE(bitwise_equal(first.grad_value, second.grad_value)) << dtype;
  }
}

TEST(AttentionCuda, BroadcastMaskAndThreeDimInputs) {
  SKIP_WITHOUT_CUDA();
  const Tensor q = wiggly({3, 6, 8}, 0.0), k = wiggly({3, 9, 8}, 1.0), v = wiggly({3, 9, 4}, 2.0);
  const Tensor mask = boolean_mask(6, 9).view({1, 6, 9});
  const Tensor cpu = scaled_dot_product_attention(q, k, v, mask);
  const Tensor gpu = scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), mask.cuda());
  EXPECT_EQ(gpu.sizes(), (Shape{3, 6, 4}));
  EXPECT_TRUE(all_close(gpu.cpu(), cpu, 2e-5, 1e-4));
}

TEST(AttentionCuda, ErrorsNameTheOp) {
  SKIP_WITHOUT_CUDA();
  const Tensor q = wiggly({1, 1, 4, 300}).cuda(), v = wiggly({1, 1, 4, 8}).cuda();
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(q, q, v),
                        "scaled_dot_product_attention: on CUDA, expected head dims D and Dv of at "
                        "most 256, got D = 300");
  EXPECT_ERROR_CONTAINS(
      scaled_dot_product_attention(wiggly({1, 1, 4, 8}), v, v),
      "scaled_dot_product_attention: expected query, key and value on one device");
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(v, v, v, ones({4, 4}, kBool)),
                        "scaled_dot_product_attention: expected attn_mask on the query's device");
}

}  // namespace
}  // namespace minidl
