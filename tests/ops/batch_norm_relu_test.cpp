// batch_norm_relu (ops/norm.h): relu(batch_norm(x) + residual) as one op and one autograd node.
// Its output, its gradients (input, weight, bias, residual) and the running statistics have the
// bits of the three ops apart, in training and evaluation, NCHW and channels-last, float32 and
// bfloat16; an f64 gradient check; the errors; and a ResNet block gets the same bits fused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/autograd/node.h"
#include "minidl/models/basic_block.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/norm.h"
#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::bitwise_equal;

struct Case {
  bool training;
  bool residual;
  MemoryFormat format;
  DType dtype;
};

std::string describe(const Case& c) {
  return std::string(c.training ? "training" : "evaluation") +
         (c.residual ? ", residual" : ", no residual") +
         (c.format == MemoryFormat::ChannelsLast ? ", channels-last, " : ", NCHW, ") +
         std::string(dtype_name(c.dtype));
}

// One pass of either form on fresh copies of the same tensors: the output, the gradients of
// input, weight, bias and residual for sum(out * w), and the running statistics after it.
std::vector<Tensor> run(const Case& c, bool fused) {
  manual_seed(7);
  const Tensor x = randn({4, 3, 5, 6}).to(c.dtype).contiguous(c.format).requires_grad_();
  const Tensor residual =
      c.residual ? randn({4, 3, 5, 6}).to(c.dtype).contiguous(c.format).requires_grad_() : Tensor();
  const Tensor weight = (rand({3}) + 0.5).requires_grad_();
  const Tensor bias = randn({3}).requires_grad_();
  Tensor running_mean = randn({3}) * 0.1, running_var = rand({3}) + 0.5;
  const Tensor w = randn({4, 3, 5, 6});
  Tensor out;
  if (fused) {
    out = batch_norm_relu(x, running_mean, running_var, weight, bias, c.training, 0.1, 1e-5,
                          residual);
  } else {
    out = batch_norm(x, running_mean, running_var, weight, bias, c.training, 0.1, 1e-5);
    if (c.residual) out = out + residual;
    out = relu(out);
  }
  (out.to(kFloat32) * w).sum().backward();
  return {
      out,          x.grad(),   weight.grad(), bias.grad(), c.residual ? residual.grad() : Tensor(),
      running_mean, running_var};
}

TEST(BatchNormRelu, HasTheBitsOfTheOpsApart) {
  const char* names[] = {"out",           "grad input",   "grad weight", "grad bias",
                         "grad residual", "running_mean", "running_var"};
  for (bool training : {true, false})
    for (bool residual : {false, true})
      for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
        for (DType dtype : {kFloat32, kBFloat16}) {
          const Case c{training, residual, format, dtype};
          const std::vector<Tensor> fused = run(c, true), apart = run(c, false);
          for (size_t i = 0; i < fused.size(); ++i) {
            ASSERT_EQ(fused[i].defined(), apart[i].defined()) << describe(c) << ": " << names[i];
            if (fused[i].defined())
              EXPECT_TRUE(bitwise_equal(fused[i], apart[i])) << describe(c) << ": " << names[i];
          }
          EXPECT_EQ(fused[0].suggest_memory_format(), format) << describe(c);
        }
}

TEST(BatchNormRelu, OneAutogradNodeForTheThreeOps) {
  const Tensor x = randn({2, 3, 4, 4}).requires_grad_();
  const Tensor residual = randn({2, 3, 4, 4}).requires_grad_();
  const Tensor weight = ones({3}).requires_grad_(), bias = zeros({3}).requires_grad_();
  const Tensor with_residual =
      batch_norm_relu(x, Tensor(), Tensor(), weight, bias, true, 0.1, 1e-5, residual);
  ASSERT_NE(with_residual.grad_fn(), nullptr);
  EXPECT_EQ(with_residual.grad_fn()->name(), "BatchNormAddReluBackward");
  EXPECT_EQ(with_residual.grad_fn()->next.size(), 4u);  // input, weight, bias, residual
  const Tensor without = batch_norm_relu(x, Tensor(), Tensor(), weight, bias, true);
  EXPECT_EQ(without.grad_fn()->name(), "BatchNormReluBackward");
  // Only the residual needs a gradient: still one node, and it reaches the residual.
  const Tensor frozen = randn({2, 3, 4, 4});
  const Tensor through_residual =
      batch_norm_relu(frozen, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, residual);
  through_residual.sum().backward();
  EXPECT_TRUE(residual.grad().defined());
  // Nothing needs a gradient: no node.
  EXPECT_EQ(batch_norm_relu(frozen, Tensor(), Tensor(), Tensor(), Tensor(), true).grad_fn(),
            nullptr);
}

TEST(BatchNormRelu, Float64Gradcheck) {
  manual_seed(3);
  for (bool training : {true, false}) {
    const Tensor x = randn({3, 2, 3, 2}, kFloat64).requires_grad_();
    const Tensor residual = randn({3, 2, 3, 2}, kFloat64).requires_grad_();
    const Tensor weight = (rand({2}, kFloat64) + 0.5).requires_grad_();
    const Tensor bias = randn({2}, kFloat64).requires_grad_();
    const Tensor running_mean = randn({2}, kFloat64), running_var = rand({2}, kFloat64) + 0.5;
    const auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          Tensor mean = running_mean.clone(), var = running_var.clone();
          return batch_norm_relu(in[0], mean, var, in[1], in[2], training, 0.1, 1e-5, in[3]);
        },
        {x, weight, bias, residual});
    EXPECT_TRUE(result) << (training ? "training: " : "evaluation: ") << result.message;
  }
}

TEST(BatchNormRelu, AResidualOfAnotherShapeOrDtypeIsAnError) {
  const Tensor x = randn({2, 3, 4, 4});
  EXPECT_ERROR_CONTAINS(
      batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5,
                      randn({2, 3, 4, 5})),
      "batch_norm_relu: expected a residual of the input's shape [2, 3, 4, 4], got shape "
      "[2, 3, 4, 5]");
  EXPECT_ERROR_CONTAINS(
      batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5,
                      randn({2, 3, 4, 4}).to(kBFloat16)),
      "batch_norm_relu: expected a residual of the input's dtype and device (float32 on cpu), "
      "got bfloat16 on cpu");
  // batch_norm's own checks name batch_norm.
  EXPECT_ERROR_CONTAINS(batch_norm_relu(randn({2}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                        "batch_norm: expected an input of shape");
}

// A block fused (BasicBlock::forward) and the same block's modules called one op at a time.
TEST(BatchNormRelu, AResNetBlockHasTheBitsOfTheUnfusedBlock) {
  for (bool projection : {false, true}) {
    manual_seed(11);
    models::BasicBlock block(models::BasicBlockOptions(8, projection ? 16 : 8)
                                 .stride(projection ? 2 : 1)
                                 .shortcut(models::ShortcutKind::Projection));
    const Tensor x = randn({4, 8, 8, 8}).requires_grad_();
    const Tensor fused = block->forward(x);
    fused.sum().backward();
    std::vector<Tensor> fused_grads{x.grad().clone()};
    for (const Tensor& p : block->parameters()) fused_grads.push_back(p.grad().clone());
    // The running statistics moved once; undo that so that the unfused pass starts equal.
    block->zero_grad();
    x.grad().zero_();
    for (auto* bn : {block->bn1.get(), block->bn2.get()}) {
      bn->reset_running_stats();
    }
    if (projection) {
      for (auto& module : block->downsample->children())
        if (auto* bn = dynamic_cast<nn::BatchNorm2dImpl*>(module.get())) bn->reset_running_stats();
    }
    Tensor out = relu(block->bn1(block->conv1(x)));
    out = block->bn2(block->conv2(out));
    const Tensor shortcut = projection ? block->downsample(x) : x;
    const Tensor apart = relu(out + shortcut);
    apart.sum().backward();
    EXPECT_TRUE(bitwise_equal(fused, apart)) << (projection ? "projection" : "identity");
    std::vector<Tensor> apart_grads{x.grad()};
    for (const Tensor& p : block->parameters()) apart_grads.push_back(p.grad());
    ASSERT_EQ(fused_grads.size(), apart_grads.size());
    for (size_t i = 0; i < fused_grads.size(); ++i)
      EXPECT_TRUE(bitwise_equal(fused_grads[i], apart_grads[i]))
          << (projection ? "projection" : "identity") << ", gradient " << i;
  }
}

}  // namespace
}  // namespace minidl
