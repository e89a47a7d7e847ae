// nn::MultiheadAttention: outputs and averaged weights against PyTorch's
// (tests/nn/multihead_attention_reference.h), parameter names, shapes and initialisation, the
// sequence-first layout, need_weights against the fused path, a gradient check, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "multihead_attention_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

// The module of tools/reference/make_attention_reference.py's mha_values(): E = 8, 2 heads,
// batch_first, float64, wiggly weights.
nn::MultiheadAttention reference_module() {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  mha->to(kFloat64);
  NoGradGuard no_grad;
  mha->in_proj_weight.copy_(wiggly({24, 8}, 4.0, kFloat64) * 0.5);
  mha->in_proj_bias.copy_(wiggly({24}, 5.0, kFloat64) * 0.1);
  mha->out_proj->weight.copy_(wiggly({8, 8}, 6.0, kFloat64) * 0.5);
  mha->out_proj->bias.copy_(wiggly({8}, 7.0, kFloat64) * 0.1);
  return mha;
}

Tensor doubles(const std::vector<double>& values, const Shape& sizes) {
  return from_host(values.data(), sizes, kFloat64);
}

TEST(MultiheadAttention, MatchesPyTorchWithPaddingAndWeights) {
  nn::MultiheadAttention mha = reference_module();
  const Tensor q = wiggly({2, 5, 8}, 0.0, kFloat64), k = wiggly({2, 6, 8}, 1.0, kFloat64),
               v = wiggly({2, 6, 8}, 2.0, kFloat64);
  std::vector<uint8_t> padding(12, 0);
  padding[6 + 4] = padding[6 + 5] = 1;  // batch 1 ignores keys 4 and 5
  const Tensor key_padding_mask = from_host(padding.data(), {2, 6}, kUInt8).to(kBool);
  auto [out, weights] = mha->forward(q, k, v, key_padding_mask, /*need_weights=*/true);
  EXPECT_TRUE(all_close(out, doubles(testing::kMultiheadAttentionOut, {2, 5, 8}), 1e-12, 1e-10));
  EXPECT_TRUE(
      all_close(weights, doubles(testing::kMultiheadAttentionWeights, {2, 5, 6}), 1e-12, 1e-10));
  // The fused path (no weights) gives the same output.
  auto [fused, no_weights] = mha->forward(q, k, v, key_padding_mask);
  EXPECT_FALSE(no_weights.defined());
  EXPECT_TRUE(all_close(fused, out, 1e-12, 1e-10));
}

TEST(MultiheadAttention, MatchesPyTorchCausalSelfAttention) {
  nn::MultiheadAttention mha = reference_module();
  const Tensor q = wiggly({2, 5, 8}, 0.0, kFloat64);
  std::vector<uint8_t> above(25, 0);
  for (int i = 0; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j) above[static_cast<size_t>(i * 5 + j)] = 1;
  const Tensor causal_mask = from_host(above.data(), {5, 5}, kUInt8).to(kBool);
  const Tensor expected = doubles(testing::kMultiheadAttentionCausalOut, {2, 5, 8});
  // The hint (the kernel's causal mode), the mask alone, and the explicit weights path agree.
  EXPECT_TRUE(all_close(std::get<0>(mha->forward(q, q, q, {}, false, causal_mask, true)), expected,
                        1e-12, 1e-10));
  EXPECT_TRUE(all_close(std::get<0>(mha->forward(q, q, q, {}, false, causal_mask)), expected, 1e-12,
                        1e-10));
  EXPECT_TRUE(all_close(std::get<0>(mha->forward(q, q, q, {}, true, causal_mask, true)), expected,
                        1e-12, 1e-10));
}

TEST(MultiheadAttention, ParametersHavePyTorchsNamesShapesAndInitialisation) {
  manual_seed(3);
  nn::MultiheadAttention mha(16, 4);
  const auto parameters = mha->named_parameters();
  std::vector<std::string> names;
  for (const auto& item : parameters) names.push_back(item.key());
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                             "out_proj.bias"}));
  EXPECT_EQ(mha->in_proj_weight.sizes(), (Shape{48, 16}));
  EXPECT_EQ(mha->in_proj_bias.sizes(), (Shape{48}));
  EXPECT_EQ(mha->out_proj->weight.sizes(), (Shape{16, 16}));
  // xavier_uniform_: U(-a, a), a = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / 64).
  const double bound = std::sqrt(6.0 / 64.0);
  EXPECT_LE(max(abs(mha->in_proj_weight)).item<float>(), bound);
  EXPECT_GT(max(abs(mha->in_proj_weight)).item<float>(), 0.9 * bound);
  EXPECT_EQ(max(abs(mha->in_proj_bias)).item<float>(), 0.0f);
  EXPECT_EQ(max(abs(mha->out_proj->bias)).item<float>(), 0.0f);
  // out_proj.weight keeps Linear's bound 1 / sqrt(16).
  EXPECT_LE(max(abs(mha->out_proj->weight)).item<float>(), 0.25);

  nn::MultiheadAttention no_bias(nn::MultiheadAttentionOptions(16, 4).bias(false));
  EXPECT_EQ(no_bias->named_parameters().size(), 2u);
  EXPECT_FALSE(no_bias->in_proj_bias.defined());
  std::ostringstream printed;
  printed << *mha;
  EXPECT_EQ(printed.str().rfind("MultiheadAttention(embed_dim=16, num_heads=4, dropout=0, "
                                "bias=true, batch_first=false)",
                                0),
            0u)
      << printed.str();
}

TEST(MultiheadAttention, SequenceFirstAndUnbatchedMatchBatchFirst) {
  nn::MultiheadAttention batch_first = reference_module();
  nn::MultiheadAttention sequence_first(nn::MultiheadAttentionOptions(8, 2));
  sequence_first->to(kFloat64);
  {
    NoGradGuard no_grad;
    sequence_first->in_proj_weight.copy_(batch_first->in_proj_weight);
    sequence_first->in_proj_bias.copy_(batch_first->in_proj_bias);
    sequence_first->out_proj->weight.copy_(batch_first->out_proj->weight);
    sequence_first->out_proj->bias.copy_(batch_first->out_proj->bias);
  }
  const Tensor q = wiggly({2, 5, 8}, 0.0, kFloat64), k = wiggly({2, 6, 8}, 1.0, kFloat64);
  const Tensor expected = std::get<0>(batch_first->forward(q, k, k));
  const Tensor seq =
      std::get<0>(sequence_first->forward(q.transpose(0, 1), k.transpose(0, 1), k.transpose(0, 1)));
  EXPECT_EQ(seq.sizes(), (Shape{5, 2, 8}));
  EXPECT_TRUE(all_close(seq.transpose(0, 1).contiguous(), expected, 1e-12));
  const Tensor unbatched =
      std::get<0>(batch_first->forward(q.select(0, 1), k.select(0, 1), k.select(0, 1)));
  EXPECT_TRUE(all_close(unbatched, expected.select(0, 1).contiguous(), 1e-12));
}

TEST(MultiheadAttention, GradientsReachInputsAndParameters) {
  nn::MultiheadAttention mha = reference_module();
  const Tensor q = wiggly({1, 3, 8}, 0.0, kFloat64).requires_grad_();
  const Tensor k = wiggly({1, 4, 8}, 1.0, kFloat64).requires_grad_();
  auto fn = [&](const std::vector<Tensor>& in) {
    return std::get<0>(mha->forward(in[0], in[1], in[1]));
  };
  const GradcheckResult result = gradcheck(fn, {q, k});
  EXPECT_TRUE(result) << result.message;
  sum(std::get<0>(mha->forward(q, k, k))).backward();
  EXPECT_TRUE(mha->in_proj_weight.grad().defined());
  EXPECT_TRUE(mha->out_proj->bias.grad().defined());
}

TEST(MultiheadAttention, DropoutOnlyInTrainingAndNotGraphSafe) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).dropout(0.5));
  EXPECT_FALSE(mha->is_cuda_graph_safe());
  EXPECT_TRUE(nn::MultiheadAttention(8, 2)->is_cuda_graph_safe());
  const Tensor x = wiggly({4, 2, 8});
  manual_seed(1);
  const Tensor first = std::get<0>(mha->forward(x, x, x)).detach();
  const Tensor second = std::get<0>(mha->forward(x, x, x)).detach();
  EXPECT_FALSE(all_close(first, second, 1e-4, 1e-4));  // two masks
  mha->eval();
  EXPECT_TRUE(testing::bitwise_equal(std::get<0>(mha->forward(x, x, x)),
                                     std::get<0>(mha->forward(x, x, x))));
}

TEST(MultiheadAttention, Errors) {
  EXPECT_ERROR_CONTAINS(nn::MultiheadAttention(10, 3),
                        "MultiheadAttention: expected a positive embed_dim divisible by a positive "
                        "num_heads, got embed_dim 10 and num_heads 3");
  nn::MultiheadAttention mha(8, 2);
  const Tensor x = wiggly({4, 2, 8});
  EXPECT_ERROR_CONTAINS(
      mha->forward(x, x, x, {}, false, {}, true),
      "MultiheadAttention: is_causal is a hint that attn_mask is the causal mask");
  EXPECT_ERROR_CONTAINS(mha->forward(x, wiggly({4, 2, 6}), x),
                        "expected query, key and value with embed_dim (8) features");
  EXPECT_ERROR_CONTAINS(mha->forward(x, x, x, {}, false, ones({3, 4}, kBool)),
                        "MultiheadAttention: expected attn_mask [4, 4] or [4, 4, 4]");
  EXPECT_ERROR_CONTAINS(mha->forward(x, x, x, ones({2, 3}, kBool)),
                        "MultiheadAttention: expected key_padding_mask [2, 4] (N, S)");
}

}  // namespace
}  // namespace minidl
