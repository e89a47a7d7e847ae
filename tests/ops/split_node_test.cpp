// split, chunk and unbind as one graph node with several outputs (Note [One node for all
// pieces] in ops/split.cpp), and what the engine does with such a node: each piece is one
// output, its gradient arrives at its own slot (hooks, autograd::grad and a backward started
// from a piece see that output alone), the input gets one gradient written once, and second
// derivatives flow through it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/autograd/node.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "test_util.h"

namespace minidl {
namespace {

int64_t calls_of(const std::vector<OpProfiler::Record>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return op.calls;
  return 0;
}

TEST(SplitNode, PiecesAreTheOutputsOfOneNode) {
  Tensor x = testing::wiggly({4, 6}, 0.1, kFloat64).requires_grad_();
  std::vector<Tensor> pieces = x.split(2, 1);
  ASSERT_EQ(pieces.size(), 3u);
  for (size_t i = 0; i < pieces.size(); ++i) {
    ASSERT_NE(pieces[i].grad_fn(), nullptr);
    EXPECT_EQ(pieces[i].grad_fn(), pieces[0].grad_fn());
    EXPECT_EQ(pieces[i].unsafe_impl()->autograd_meta().output_nr, i);
  }
  EXPECT_EQ(pieces[0].grad_fn()->name(), "SplitBackward");
  EXPECT_EQ(pieces[0].grad_fn()->num_outputs(), 3u);
  EXPECT_EQ(x.split({1, 5}, 1)[0].grad_fn()->name(), "SplitWithSizesBackward");
  EXPECT_EQ(x.chunk(2, 0)[1].grad_fn()->name(), "SplitBackward");
  EXPECT_EQ(x.unbind(0)[3].grad_fn()->name(), "UnbindBackward");
  // The pieces are still views of the input.
  EXPECT_EQ(pieces[1].data_ptr<double>(), x.data_ptr<double>() + 2);
  // Without grad mode, or for an input that needs no gradient, nothing is recorded.
  EXPECT_EQ(testing::wiggly({4, 6}).split(2, 1)[0].grad_fn(), nullptr);
  {
    NoGradGuard no_grad;
    EXPECT_EQ(x.split(2, 1)[0].grad_fn(), nullptr);
  }
}

TEST(SplitNode, EachPieceGradientGoesToItsPlaceAndUnusedPiecesGiveZeros) {
  Tensor x = testing::wiggly({3, 7}, 0.3, kFloat64).requires_grad_();
  std::vector<Tensor> pieces = x.split(3, 1);  // widths 3, 3, 1
  (pieces[0] * 2 + pieces[1] * 5).sum().backward();
  const std::vector<double> grad = to_vector<double>(x.grad());
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t column = 0; column < 7; ++column)
      EXPECT_EQ(grad[row * 7 + column], column < 3   ? 2.0
                                        : column < 6 ? 5.0
                                                     : 0.0)
          << row << ", " << column;

  // unbind: each row's gradient in its row.
  Tensor y = testing::wiggly({3, 2}, 0.3, kFloat64).requires_grad_();
  std::vector<Tensor> rows = y.unbind(0);
  (rows[2] * 3 + rows[0]).sum().backward();
  EXPECT_EQ(to_vector<double>(y.grad()), (std::vector<double>{1, 1, 0, 0, 3, 3}));
}

TEST(SplitNode, GradientsMatchCentralDifferencesFirstAndSecondOrder) {
  const auto pieces_used_unevenly = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> pieces = in[0].split(Shape{1, 3, 2}, 2);
    std::vector<Tensor> rows = in[0].unbind(0);
    std::vector<Tensor> chunks = in[0].chunk(3, 1);
    return pieces[0] * pieces[2].sum(2, true) + (pieces[1] * pieces[1]).sum(2, true) +
           rows[1].sum() * chunks[2].sum() + chunks[0].exp().sum();
  };
  const Tensor x = testing::wiggly({2, 3, 6}, 0.4, kFloat64).requires_grad_();
  auto first = gradcheck(pieces_used_unevenly, {x});
  EXPECT_TRUE(first) << first.message;
  auto second = gradgradcheck(pieces_used_unevenly, {x});
  EXPECT_TRUE(second) << second.message;
}

TEST(SplitNode, InputGradientIsWrittenOnceWithoutZeroFilledCopiesOrAdditions) {
  // GPT's q, k, v = c_attn(x).split(n_embd, 2), each piece used.
  Tensor x = testing::wiggly({2, 5, 12}, 0.2).requires_grad_();
  Tensor qkv = x * 3;
  std::vector<Tensor> pieces = qkv.split(4, 2);
  Tensor loss = (pieces[0] * pieces[1] + pieces[2]).sum();
  std::vector<OpProfiler::Record> ops;
  {
    OpProfiler profiler;
    loss.backward();
    ops = profiler.ops();
  }
  EXPECT_EQ(calls_of(ops, "SplitBackward"), 1);
  EXPECT_EQ(calls_of(ops, "SliceBackward"), 0);
  EXPECT_EQ(calls_of(ops, "zero_"), 0);
  // A slice node per piece would fill three full-size gradients with zeros and add them.
  EXPECT_EQ(calls_of(ops, "add"), 0);
  const std::vector<float> p0 = to_vector<float>(pieces[0].detach().contiguous());
  const std::vector<float> p1 = to_vector<float>(pieces[1].detach().contiguous());
  const std::vector<float> grad = to_vector<float>(x.grad());
  for (int64_t token = 0; token < 10; ++token) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_FLOAT_EQ(grad[token * 12 + c], 3 * p1[token * 4 + c]);
      EXPECT_FLOAT_EQ(grad[token * 12 + 4 + c], 3 * p0[token * 4 + c]);
      EXPECT_FLOAT_EQ(grad[token * 12 + 8 + c], 3);
    }
  }
}

TEST(SplitNode, ChannelsLastInputGetsAChannelsLastGradient) {
  Tensor x = testing::wiggly({2, 4, 3, 3}).contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  std::vector<Tensor> halves = x.chunk(2, 1);
  (halves[0] * 2 + halves[1]).sum().backward();
  EXPECT_TRUE(x.grad().is_contiguous(MemoryFormat::ChannelsLast));
  const std::vector<float> grad = to_vector<float>(x.grad().contiguous());
  for (int64_t i = 0; i < 72; ++i) EXPECT_EQ(grad[i], (i / 9) % 4 < 2 ? 2.0f : 1.0f) << i;
}

TEST(SplitNode, HooksAndAutogradGradSeeOnePieceEach) {
  Tensor x = testing::wiggly({2, 6}, 0.2, kFloat64).requires_grad_();
  std::vector<Tensor> pieces = x.split(2, 1);
  Shape seen;
  pieces[1].register_hook([&seen](const Tensor& grad) {
    seen = grad.sizes();
    return grad * 10;  // replaces that piece's gradient only
  });
  Tensor loss = (pieces[0] + pieces[1] + pieces[2] * 2).sum();
  const std::vector<Tensor> grads =
      autograd::grad({loss}, {pieces[2], pieces[1]}, {}, /*retain_graph=*/true);
  EXPECT_EQ(to_vector<double>(grads[0]), std::vector<double>(4, 2.0));
  EXPECT_EQ(to_vector<double>(grads[1]), std::vector<double>(4, 10.0));  // after the hook
  EXPECT_EQ(seen, (Shape{2, 2}));
  loss.backward();
  EXPECT_EQ(to_vector<double>(x.grad()),
            (std::vector<double>{1, 1, 10, 10, 2, 2, 1, 1, 10, 10, 2, 2}));
}

TEST(SplitNode, BackwardFromOnePieceAndFromTwoRoots) {
  Tensor x = testing::wiggly({6}, 0.2, kFloat64).requires_grad_();
  std::vector<Tensor> pieces = x.chunk(3);
  pieces[1].backward(tensor({4.0, 5.0}, kFloat64));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{0, 0, 4, 5, 0, 0}));
  // autograd::grad from two pieces of one node at once: both slots are seeded.
  std::vector<Tensor> again = x.chunk(3);
  const Tensor grad = autograd::grad(
      {again[0], again[2]}, {x}, {tensor({1.0, 2.0}, kFloat64), tensor({3.0, 4.0}, kFloat64)})[0];
  EXPECT_EQ(to_vector<double>(grad), (std::vector<double>{1, 2, 0, 0, 3, 4}));
}

TEST(SplitNode, EmptyPiecesAndEmptyInputs) {
  Tensor x = testing::wiggly({2, 3}, 0.2, kFloat64).requires_grad_();
  std::vector<Tensor> pieces = x.split({0, 3, 0}, 1);
  ASSERT_EQ(pieces.size(), 3u);
  (pieces[1] * 2).sum().backward();
  EXPECT_EQ(to_vector<double>(x.grad()), std::vector<double>(6, 2.0));
  // An empty dimension's chunks are separate outputs of one node.
  Tensor empty_input = zeros({0, 2}, kFloat64).requires_grad_();
  std::vector<Tensor> chunks = empty_input.chunk(3);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].unsafe_impl()->autograd_meta().output_nr, 2u);
  chunks[2].sum().backward();
  EXPECT_EQ(empty_input.grad().sizes(), (Shape{0, 2}));
}

}  // namespace
}  // namespace minidl
