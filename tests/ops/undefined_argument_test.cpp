// An undefined (default-constructed) tensor passed to an op is reported with the op's name and
// the argument's, not by whichever accessor first reached it ("Tensor: this tensor is
// undefined"). One call per op family's shared checks.
#include <gtest/gtest.h>

#include "minidl/ops/attention.h"
#include "minidl/ops/closeness.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/einsum.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/interpolate.h"
#include "minidl/ops/layer_norm.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/masking.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/pool.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/scan.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"
#include "test_util.h"

namespace minidl {
namespace {

// "<op>: argument '<argument>' is an undefined tensor (default-constructed)"
std::string undefined_message(const std::string& op, const std::string& argument) {
  return op + ": argument '" + argument + "' is an undefined tensor (default-constructed)";
}

TEST(UndefinedArgument, ElementwiseOpsNameTheOpAndTheArgument) {
  const Tensor x = ones({2, 3});
  const Tensor undefined;
  EXPECT_ERROR_CONTAINS(add(x, undefined), undefined_message("add", "other"));
  EXPECT_ERROR_CONTAINS(undefined + x, undefined_message("add", "input"));
  EXPECT_ERROR_CONTAINS(sub(undefined, 1.0), undefined_message("sub", "input"));
  EXPECT_ERROR_CONTAINS(x * undefined, undefined_message("mul", "other"));
  EXPECT_ERROR_CONTAINS(div(undefined, x), undefined_message("div", "input"));
  EXPECT_ERROR_CONTAINS(maximum(x, undefined), undefined_message("maximum", "other"));
  EXPECT_ERROR_CONTAINS(atan2(x, undefined), undefined_message("atan2", "other"));
  EXPECT_ERROR_CONTAINS(fmod(undefined, 2.0), undefined_message("fmod", "input"));
  EXPECT_ERROR_CONTAINS(remainder(x, undefined), undefined_message("remainder", "other"));
  EXPECT_ERROR_CONTAINS(clamp(undefined, x, std::nullopt), undefined_message("clamp", "input"));
  EXPECT_ERROR_CONTAINS(clamp_min(x, undefined), undefined_message("clamp_min", "min"));
  EXPECT_ERROR_CONTAINS(clamp_max(undefined, x), undefined_message("clamp_max", "input"));
  EXPECT_ERROR_CONTAINS(isclose(x, undefined), undefined_message("isclose", "other"));
  EXPECT_ERROR_CONTAINS(equal(undefined, x), undefined_message("equal", "input"));
  EXPECT_ERROR_CONTAINS(softplus(undefined), undefined_message("softplus", "input"));
  EXPECT_ERROR_CONTAINS(hardtanh(undefined), undefined_message("hardtanh", "input"));
  EXPECT_ERROR_CONTAINS(isfinite(undefined), undefined_message("isfinite", "input"));
  EXPECT_ERROR_CONTAINS(logical_xor(undefined, x), undefined_message("logical_xor", "input"));
  EXPECT_ERROR_CONTAINS(neg(undefined), undefined_message("neg", "input"));
  EXPECT_ERROR_CONTAINS(relu(undefined), undefined_message("relu", "input"));
  EXPECT_ERROR_CONTAINS(exp(undefined), undefined_message("exp", "input"));
  EXPECT_ERROR_CONTAINS(pow(undefined, 2.0), undefined_message("pow", "input"));
  EXPECT_ERROR_CONTAINS(gt(undefined, 0.0), undefined_message("gt", "input"));
  EXPECT_ERROR_CONTAINS(eq(x, undefined), undefined_message("eq", "other"));
  EXPECT_ERROR_CONTAINS(where(undefined, x, x), undefined_message("where", "condition"));
  EXPECT_ERROR_CONTAINS(where(gt(x, 0.0), x, undefined), undefined_message("where", "other"));
}

TEST(UndefinedArgument, InPlaceOpsNameSelfOrTheOtherOperand) {
  Tensor x = ones({2, 3});
  Tensor undefined;
  EXPECT_ERROR_CONTAINS(x.add_(undefined), undefined_message("add_", "other"));
  EXPECT_ERROR_CONTAINS(undefined.add_(x), undefined_message("add_", "self"));
  EXPECT_ERROR_CONTAINS(undefined.mul_(2.0), undefined_message("mul_", "self"));
  EXPECT_ERROR_CONTAINS(undefined.div_(2.0), undefined_message("div_", "self"));
  EXPECT_ERROR_CONTAINS(x.copy_(undefined), undefined_message("copy_", "src"));
}

TEST(UndefinedArgument, LinalgConvAndLossOpsNameTheArgument) {
  const Tensor undefined;
  EXPECT_ERROR_CONTAINS(matmul(ones({2, 3}), undefined), undefined_message("matmul", "other"));
  EXPECT_ERROR_CONTAINS(linear(undefined, ones({4, 3})), undefined_message("linear", "input"));
  EXPECT_ERROR_CONTAINS(linear(ones({2, 3}), undefined), undefined_message("linear", "weight"));
  EXPECT_ERROR_CONTAINS(conv2d(ones({1, 2, 5, 5}), undefined),
                        undefined_message("conv2d", "weight"));
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(undefined, ones({1, 2, 3}), ones({1, 2, 3})),
                        undefined_message("scaled_dot_product_attention", "query"));
  EXPECT_ERROR_CONTAINS(scaled_dot_product_attention(ones({1, 2, 3}), ones({1, 2, 3}), undefined),
                        undefined_message("scaled_dot_product_attention", "value"));
  EXPECT_ERROR_CONTAINS(cross_entropy(undefined, zeros({2}, kInt64)),
                        undefined_message("cross_entropy", "logits"));
  EXPECT_ERROR_CONTAINS(cross_entropy(ones({2, 3}), undefined),
                        undefined_message("cross_entropy", "target"));
  EXPECT_ERROR_CONTAINS(nll_loss(undefined, zeros({2}, kInt64)),
                        undefined_message("nll_loss", "log_probs"));
  EXPECT_ERROR_CONTAINS(mse_loss(ones({2}), undefined), undefined_message("mse_loss", "target"));
  EXPECT_ERROR_CONTAINS(l1_loss(ones({2}), undefined), undefined_message("l1_loss", "target"));
  EXPECT_ERROR_CONTAINS(log_softmax(undefined, 1), undefined_message("log_softmax", "input"));
}

TEST(UndefinedArgument, ReductionsNameTheOp) {
  const Tensor undefined;
  EXPECT_ERROR_CONTAINS(sum(undefined), undefined_message("sum", "input"));
  EXPECT_ERROR_CONTAINS(sum(undefined, {0}), undefined_message("sum", "input"));
  EXPECT_ERROR_CONTAINS(undefined.mean(), undefined_message("mean", "input"));
  EXPECT_ERROR_CONTAINS(max(undefined, 0), undefined_message("max", "input"));
  EXPECT_ERROR_CONTAINS(min(undefined), undefined_message("min", "input"));
  EXPECT_ERROR_CONTAINS(argmax(undefined, 1), undefined_message("argmax", "input"));
  EXPECT_ERROR_CONTAINS(var(undefined), undefined_message("var", "input"));
}

TEST(UndefinedArgument, LayerOpsNameTheOp) {
  const Tensor undefined;
  EXPECT_ERROR_CONTAINS(max_pool2d(undefined, 2), undefined_message("max_pool2d", "input"));
  EXPECT_ERROR_CONTAINS(adaptive_avg_pool2d(undefined, 1),
                        undefined_message("adaptive_avg_pool2d", "input"));
  EXPECT_ERROR_CONTAINS(batch_norm(undefined, Tensor(), Tensor(), Tensor(), Tensor(),
                                   /*training=*/true, 0.1, 1e-5),
                        undefined_message("batch_norm", "input"));
  EXPECT_ERROR_CONTAINS(layer_norm(undefined, {3}), undefined_message("layer_norm", "input"));
  EXPECT_ERROR_CONTAINS(dropout(undefined, 0.5, /*training=*/true),
                        undefined_message("dropout", "input"));
  EXPECT_ERROR_CONTAINS(index_select(ones({3}), 0, undefined),
                        undefined_message("index_select", "index"));
  EXPECT_ERROR_CONTAINS(one_hot(undefined, 3), undefined_message("one_hot", "labels"));
  EXPECT_ERROR_CONTAINS(embedding(undefined, tensor(std::vector<int64_t>{0})),
                        undefined_message("embedding", "weight"));
  EXPECT_ERROR_CONTAINS(embedding(ones({3, 2}), undefined),
                        undefined_message("embedding", "indices"));
  const Tensor index = zeros({1}, kInt64);
  EXPECT_ERROR_CONTAINS(gather(undefined, 0, index), undefined_message("gather", "input"));
  EXPECT_ERROR_CONTAINS(gather(ones({3}), 0, undefined), undefined_message("gather", "index"));
  EXPECT_ERROR_CONTAINS(scatter(ones({3}), 0, index, undefined),
                        undefined_message("scatter", "src"));
  EXPECT_ERROR_CONTAINS(scatter_add(undefined, 0, index, ones({1})),
                        undefined_message("scatter_add", "input"));
  EXPECT_ERROR_CONTAINS(index_add(ones({3}), 0, index, undefined),
                        undefined_message("index_add", "source"));
  EXPECT_ERROR_CONTAINS(masked_select(ones({3}), undefined),
                        undefined_message("masked_select", "mask"));
  EXPECT_ERROR_CONTAINS(index_put(ones({3}), {index}, undefined),
                        undefined_message("index_put", "values"));
  EXPECT_ERROR_CONTAINS(einsum("i,i", {ones({3}), undefined}),
                        undefined_message("einsum", "operand"));
  EXPECT_ERROR_CONTAINS(upsample_bilinear2d(undefined, {2, 2}, false),
                        undefined_message("upsample_bilinear2d", "input"));
  EXPECT_ERROR_CONTAINS(upsample_nearest1d(undefined, {2}),
                        undefined_message("upsample_nearest1d", "input"));
  EXPECT_ERROR_CONTAINS(pad(undefined, {1, 1}, PadMode::Circular),
                        undefined_message("pad", "input"));
}

TEST(UndefinedArgument, SortingAndSamplingNameTheOp) {
  const Tensor undefined;
  EXPECT_ERROR_CONTAINS(sort(undefined), undefined_message("sort", "input"));
  EXPECT_ERROR_CONTAINS(argsort(undefined), undefined_message("argsort", "input"));
  EXPECT_ERROR_CONTAINS(topk(undefined, 1), undefined_message("topk", "input"));
  EXPECT_ERROR_CONTAINS(cumsum(undefined, 0), undefined_message("cumsum", "input"));
  EXPECT_ERROR_CONTAINS(cumprod(undefined, 0), undefined_message("cumprod", "input"));
  EXPECT_ERROR_CONTAINS(prod(undefined), undefined_message("prod", "input"));
  EXPECT_ERROR_CONTAINS(multinomial(undefined, 1), undefined_message("multinomial", "probs"));
  EXPECT_ERROR_CONTAINS(bernoulli(undefined), undefined_message("bernoulli", "p"));
  EXPECT_ERROR_CONTAINS(rand_like(undefined), undefined_message("rand_like", "input"));
  EXPECT_ERROR_CONTAINS(randn_like(undefined), undefined_message("randn_like", "input"));
}

}  // namespace
}  // namespace minidl
