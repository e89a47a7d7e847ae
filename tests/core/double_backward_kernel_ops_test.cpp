// Double backward (create_graph) of the ops whose first backward is a kernel of their own:
// cumsum, cumprod and prod (with zeros), vector_norm, binary_cross_entropy, dropout, sort and
// topk, gather, scatter, scatter_add, index_select and index_add (and flip, roll and padding,
// built on them), embedding; and the losses composed of recorded ops (with logits, smooth L1).
// Under create_graph each gives its gradient as recorded ops; these tests check that gradient
// against the kernel's (they must be equal), its derivative with central differences
// (gradgradcheck), and second derivatives against PyTorch 2.15's
// (tests/core/double_backward_reference.h, tools/reference/make_double_backward_reference.py).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/double_backward_inputs.h"
#include "core/double_backward_reference.h"
#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/embedding.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/scan.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace ref = double_backward_reference;
using double_backward_inputs::Fn;
using double_backward_inputs::leaf;
using double_backward_inputs::wig;

// The script's with_zeros(): a [2, 4] input whose first row has one zero and second row two.
Tensor with_zeros() {
  const Tensor mask = tensor(std::vector<double>{1, 0, 1, 1, 0, 1, 0, 1}, {2, 4});
  return (wig({2, 4}, 0.0, 1.0, 0.5) * mask).requires_grad_(true);
}

Tensor index(const std::vector<int64_t>& values, const Shape& sizes) {
  return tensor(values, sizes);
}
Tensor gather_index() { return index({3, 0, 0, 1, 2, 1}, {2, 3}); }
// No index twice in a row: with repeats, which write scatter keeps is its choice, and (as in
// PyTorch) every src element gets the gradient at its index all the same.
Tensor scatter_index() { return index({3, 0, 2, 1, 2, 0}, {2, 3}); }
Tensor embedding_indices() { return index({0, 1, 3, 3, 3, 2}, {2, 3}); }

// dropout draws a new mask at every call unless the generator restarts: the checks call the
// function many times and need the same mask each time.
Tensor seeded_dropout(const Tensor& x) {
  manual_seed(7);
  return dropout(x, 0.4, /*training=*/true);
}

struct Case {
  std::string name;
  Fn fn;
  std::vector<Tensor> inputs;
};

// One input each unless named otherwise; all float64 leaves.
std::vector<Case> cases() {
  Tensor x = leaf({2, 4}, 0.0);
  Tensor positive = leaf({2, 4}, 0.0, 1.0, 0.5);
  Tensor p = leaf({2, 4}, 0.0, 0.3, 0.5), t = leaf({2, 4}, 1.0, 0.3, 0.5);
  Tensor src = leaf({2, 3}, 1.0), wide_src = leaf({3, 4}, 2.0);
  Tensor weight = leaf({4, 3}, 0.0), image = leaf({1, 2, 5}, 0.0);
  return {
      {"cumsum", [](const auto& v) { return sin(cumsum(v[0], 1)); }, {x}},
      {"cumsum dim 0", [](const auto& v) { return cumsum(v[0], 0) * v[0]; }, {x}},
      {"cumprod", [](const auto& v) { return cumprod(v[0], 1); }, {positive}},
      {"cumprod dim 0", [](const auto& v) { return cumprod(v[0], 0) * v[0]; }, {positive}},
      {"cumprod with zeros", [](const auto& v) { return cumprod(v[0], 1); }, {with_zeros()}},
      {"prod dim with zeros", [](const auto& v) { return prod(v[0], 1, true); }, {with_zeros()}},
      {"prod of a row with a zero",
       [](const auto& v) { return prod(v[0].select(0, 0)); },
       {with_zeros()}},
      {"prod", [](const auto& v) { return prod(v[0]); }, {positive}},
      {"logsumexp", [](const auto& v) { return logsumexp(v[0], {1}); }, {x}},
      {"std", [](const auto& v) { return std(v[0], {1}); }, {x}},
      {"norm", [](const auto& v) { return norm(v[0]); }, {x}},
      {"norm p=3 dim", [](const auto& v) { return norm(v[0], 3.0, {1}); }, {x}},
      {"norm p=1.5 keepdim", [](const auto& v) { return norm(v[0], 1.5, {0}, true) * v[0]; }, {x}},
      {"norm p=1", [](const auto& v) { return square(norm(v[0], 1.0, {1})); }, {x}},
      {"norm p=inf", [](const auto& v) { return square(norm(v[0], INFINITY, {1})); }, {x}},
      {"binary_cross_entropy",
       [](const auto& v) { return binary_cross_entropy(v[0], v[1], {}, Reduction::None); },
       {p, t}},
      {"binary_cross_entropy mean",
       [](const auto& v) { return binary_cross_entropy(v[0], v[1]) * sum(v[0]); },
       {p, t}},
      {"binary_cross_entropy_with_logits, pos_weight",
       [](const auto& v) {
         return binary_cross_entropy_with_logits(v[0], v[1], {}, v[1] * 2.0 + 0.5);
       },
       {x, t}},
      {"smooth_l1_loss",
       [](const auto& v) { return smooth_l1_loss(v[0], v[1] * 2.0, Reduction::None, 0.7); },
       {x, t}},
      {"amax", [](const auto& v) { return square(amax(v[0], {1})); }, {x}},
      {"dropout", [](const auto& v) { return square(seeded_dropout(v[0])); }, {x}},
      {"sort", [](const auto& v) { return exp(std::get<0>(sort(v[0], 0))); }, {x}},
      {"sort descending",
       [](const auto& v) { return std::get<0>(sort(v[0], 1, true)) * v[0]; },
       {x}},
      {"topk", [](const auto& v) { return square(std::get<0>(topk(v[0], 2, 1))); }, {x}},
      {"gather", [](const auto& v) { return square(gather(v[0], 1, gather_index())); }, {x}},
      {"scatter",
       [](const auto& v) { return square(scatter(v[0], 1, scatter_index(), v[1])); },
       {x, src}},
      {"scatter_add, src wider than the index",
       [](const auto& v) { return square(scatter_add(v[0], 1, gather_index(), v[1])); },
       {x, wide_src}},
      {"index_select",
       [](const auto& v) {
         return sin(index_select(v[0], 1, index({3, 0, 3}, {3})));
       },
       {x}},
      {"index_add",
       [](const auto& v) {
         return square(index_add(v[0], 1, index({3, 0, 3}, {3}), v[1]));
       },
       {x, src}},
      {"flip", [](const auto& v) { return sin(flip(v[0], {1})) * v[0]; }, {x}},
      {"roll",
       [](const auto& v) {
         return roll(v[0], {1, -1}, {0, 1}) * v[0];
       },
       {x}},
      {"replicate pad",
       [](const auto& v) {
         return square(pad(v[0], {1, 2}, PadMode::Replicate));
       },
       {image}},
      {"reflect pad",
       [](const auto& v) {
         return square(pad(v[0], {2, 3}, PadMode::Reflect));
       },
       {image}},
      {"embedding",
       [](const auto& v) { return tanh(embedding(v[0], embedding_indices())); },
       {weight}},
      {"embedding with padding_idx",
       [](const auto& v) { return tanh(embedding(v[0], embedding_indices(), 1)); },
       {weight}},
  };
}

TEST(DoubleBackwardOfKernelOps, Gradgradcheck) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(gradgradcheck(c.fn, c.inputs));
  }
}

// gradgradcheck differentiates whatever gradient create_graph computes; this checks that
// gradient itself: the recorded formulas give the kernels' first derivatives, to rounding.
TEST(DoubleBackwardOfKernelOps, RecordedFirstDerivativesEqualTheKernels) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Tensor out = c.fn(c.inputs);
    const Tensor w = wig(out.sizes(), 4.0);
    const std::vector<Tensor> kernels = autograd::grad({sum(c.fn(c.inputs) * w)}, c.inputs);
    const std::vector<Tensor> recorded = autograd::grad({sum(c.fn(c.inputs) * w)}, c.inputs, {},
                                                        std::nullopt, /*create_graph=*/true);
    ASSERT_EQ(recorded.size(), kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) {
      EXPECT_TRUE(recorded[i].requires_grad()) << "input " << i;
      EXPECT_TRUE(testing::all_close(recorded[i], kernels[i], 1e-12, 1e-12)) << "input " << i;
    }
  }
}

// u * d/dx (v * f'(x)): the script's other_case().
Tensor second_derivative(const Fn& fn, const Tensor& x) {
  const Tensor y = fn({x});
  const Tensor g = autograd::grad({y}, {x}, {wig(y.sizes(), 2.0)}, std::nullopt, true)[0];
  return autograd::grad({sum(g * wig(x.sizes(), 3.0))}, {x})[0];
}

TEST(DoubleBackwardOfKernelOps, SecondDerivativesMatchPyTorch) {
  const auto plain = [] { return leaf({2, 4}, 0.0); };
  const Tensor target = wig({2, 4}, 1.0, 0.3, 0.5);
  struct Reference {
    const char* name;
    std::function<Tensor()> input;
    Fn fn;
    const std::vector<double>& expected;
  };
  const std::vector<Reference> references = {
      {"prod dim with zeros", with_zeros, [](const auto& v) { return prod(v[0], 1); },
       ref::kSecondProdDimWithZeros},
      {"prod with a zero", with_zeros, [](const auto& v) { return prod(v[0].select(0, 0)); },
       ref::kSecondProdWithAZero},
      {"cumprod with zeros", with_zeros, [](const auto& v) { return cumprod(v[0], 1); },
       ref::kSecondCumprodWithZeros},
      {"cumprod dim 0",
       [] {
         return leaf({2, 4}, 0.0, 1.0, 0.5);
       },
       [](const auto& v) { return cumprod(v[0], 0); }, ref::kSecondCumprodDim0},
      {"cumsum", plain, [](const auto& v) { return sin(cumsum(v[0], 1)); }, ref::kSecondCumsum},
      {"logsumexp", plain, [](const auto& v) { return logsumexp(v[0], {1}); },
       ref::kSecondLogsumexp},
      {"std", plain, [](const auto& v) { return std(v[0], {1}); }, ref::kSecondStd},
      {"norm p=3", plain, [](const auto& v) { return norm(v[0], 3.0, {1}); }, ref::kSecondNorm3},
      {"norm", plain, [](const auto& v) { return norm(v[0]); }, ref::kSecondNorm2},
      {"norm p=inf squared", plain, [](const auto& v) { return square(norm(v[0], INFINITY, {1})); },
       ref::kSecondNormInfSquared},
      {"binary_cross_entropy",
       [] {
         return leaf({2, 4}, 0.0, 0.3, 0.5);
       },
       [&target](const auto& v) { return binary_cross_entropy(v[0], target, {}, Reduction::None); },
       ref::kSecondBinaryCrossEntropy},
      {"topk", plain, [](const auto& v) { return square(std::get<0>(topk(v[0], 2, 1))); },
       ref::kSecondTopk},
      {"sort", plain, [](const auto& v) { return exp(std::get<0>(sort(v[0], 0))); },
       ref::kSecondSort},
      {"gather", plain, [](const auto& v) { return square(gather(v[0], 1, gather_index())); },
       ref::kSecondGather},
      {"flip", plain, [](const auto& v) { return sin(flip(v[0], {1})) * v[0]; }, ref::kSecondFlip},
      {"embedding",
       [] {
         return leaf({4, 3}, 0.0);
       },
       [](const auto& v) { return tanh(embedding(v[0], embedding_indices(), 1)); },
       ref::kSecondEmbedding},
  };
  for (const Reference& r : references) {
    SCOPED_TRACE(r.name);
    const Tensor x = r.input();
    EXPECT_TRUE(testing::all_close(second_derivative(r.fn, x), tensor(r.expected, x.sizes()), 1e-10,
                                   1e-10));
  }
}

// dropout's second derivative, which PyTorch's generator cannot give: for f = dropout(x)^2,
// d/dx (v * f'(x)) * u = 2 u v m^2 with m = mask / (1 - p), the same mask dropout(ones) draws.
TEST(DoubleBackwardOfKernelOps, DropoutSecondDerivativeIsItsMaskSquared) {
  const Tensor x = leaf({2, 4}, 0.0);
  const Tensor h = second_derivative([](const auto& v) { return square(seeded_dropout(v[0])); }, x);
  const Tensor m = seeded_dropout(ones({2, 4}, kFloat64));
  ASSERT_TRUE(any(eq(m, 0.0)).item<bool>() && any(ne(m, 0.0)).item<bool>());  // a real mask
  EXPECT_TRUE(
      testing::all_close(h, 2.0 * wig({2, 4}, 2.0) * wig({2, 4}, 3.0) * m * m, 1e-12, 1e-12));
}

}  // namespace
}  // namespace minidl
