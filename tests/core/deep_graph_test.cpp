// Graphs far deeper than any recursion over them could go: a chain of a million recorded
// additions is dropped without backward, and backpropagated with and without retain_graph and
// dropped; a chain whose closures also hold their inputs is dropped. Freeing such a chain once
// recursed node by node and overflowed the stack at about 175,000 nodes (see Note [Releasing
// deep graphs] in core/autograd/node.cpp). In the sanitizer build (-O0) each takes 30 to 85 s,
// nearly all of it building the chain. Float64 keeps every value exact.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/node.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

constexpr int kDepth = 1'000'000;

Tensor scalar_leaf(double value) { return tensor({value}, kFloat64).requires_grad_(true); }

// A chain of `depth` nodes over `x`, each `y = next_op(y)`. `first_node` is the node nearest
// the leaf, the last one a chain releases: when it has expired, the whole chain is gone.
struct Chain {
  Tensor output;
  std::weak_ptr<autograd::Node> first_node;
};

template <class Op>
Chain make_chain(const Tensor& x, int depth, Op next_op) {
  Chain chain{next_op(x), {}};
  chain.first_node = chain.output.grad_fn();
  for (int i = 1; i < depth; ++i) chain.output = next_op(chain.output);
  return chain;
}

Chain add_one_chain(const Tensor& x, int depth) {
  return make_chain(x, depth, [](const Tensor& y) { return y + 1.0; });
}

// An identity op whose backward closure keeps its input tensor itself (not a detached
// SavedTensor), so each node has two owners: the next node's edge and, through the input's
// grad_fn, the next node's closure. No kernel runs: only the graph matters here.
Tensor identity_keeping_input(const Tensor& y) {
  Tensor out = y.detach();
  autograd::record(out, "IdentityKeepingInput", {y},
                   [y](const Tensor& grad) { return std::vector<Tensor>{grad}; });
  return out;
}

// The nodes keep their backward closures, as after backward with retain_graph.
TEST(DeepGraph, MillionNodeChainIsFreedWithoutBackward) {
  Tensor x = scalar_leaf(0.0);
  Chain chain = add_one_chain(x, kDepth);
  ASSERT_FALSE(chain.first_node.expired());
  chain.output = Tensor();  // the last owner of the chain's last node
  EXPECT_TRUE(chain.first_node.expired());
}

TEST(DeepGraph, MillionNodeChainBackwardWithAndWithoutRetainGraph) {
  Tensor x = scalar_leaf(0.5);
  Chain chain = add_one_chain(x, kDepth);
  EXPECT_EQ(chain.output.item<double>(), kDepth + 0.5);
  // Every AddBackward passes its gradient on unchanged: dy/dx is exactly 1 per backward.
  chain.output.backward({}, /*retain_graph=*/true);
  EXPECT_EQ(to_vector<double>(x.grad()), std::vector<double>{1.0});
  chain.output.backward();  // frees the closures as it goes
  EXPECT_EQ(to_vector<double>(x.grad()), std::vector<double>{2.0});
  EXPECT_ERROR_CONTAINS(chain.output.backward(), "backward through the graph a second time");
  chain.output = Tensor();
  EXPECT_TRUE(chain.first_node.expired());
}

TEST(DeepGraph, MillionNodeChainWhoseClosuresHoldTheirInputsIsFreed) {
  Tensor x = scalar_leaf(0.0);
  Chain chain = make_chain(x, kDepth, identity_keeping_input);
  chain.output = Tensor();
  EXPECT_TRUE(chain.first_node.expired());
}

}  // namespace
}  // namespace minidl
