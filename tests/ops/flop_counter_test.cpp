// FlopCounter: conv2d, matmul and linear add 2 FLOPs per multiply-add of their forward
// computation while a counter lives; counters nest; nothing counts outside them.
#include "minidl/ops/flop_counter.h"

#include <gtest/gtest.h>

#include "minidl/ops/attention.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

TEST(FlopCounter, CountsConvolutionsAndMatrixProducts) {
  const Tensor input = randn({2, 3, 8, 8}), weight = randn({4, 3, 3, 3}), bias = randn({4});
  FlopCounter counter;
  conv2d(input, weight, bias, 1, 1);  // output [2, 4, 8, 8], 3*3*3 multiply-adds per element
  EXPECT_EQ(counter.flops(), 2 * (2 * 4 * 8 * 8) * (3 * 3 * 3));
  const int64_t after_conv = counter.flops();
  matmul(randn({5, 6, 7}), randn({7, 2}));  // 5*6*2 outputs of 7 multiply-adds
  EXPECT_EQ(counter.flops() - after_conv, 2 * 5 * 6 * 2 * 7);
  const int64_t after_matmul = counter.flops();
  linear(randn({3, 4, 10}), randn({6, 10}), randn({6}));  // 12 rows x 6 outputs x 10
  EXPECT_EQ(counter.flops() - after_matmul, 2 * 12 * 6 * 10);
}

TEST(FlopCounter, CountsAttentionsTwoProducts) {
  FlopCounter counter;
  scaled_dot_product_attention(rand({2, 3, 5, 4}), rand({2, 3, 7, 4}), rand({2, 3, 7, 6}), {}, 0.0,
                               true);
  EXPECT_EQ(counter.flops(), 2 * (2 * 3 * 5 * 7) * (4 + 6));
}

TEST(FlopCounter, GroupedConvolutionCountsEachGroupsChannels) {
  FlopCounter counter;
  conv2d(randn({1, 4, 5, 5}), randn({6, 2, 3, 3}), Tensor(), 1, 0, 1, 2);  // [1, 6, 3, 3]
  EXPECT_EQ(counter.flops(), 2 * (6 * 3 * 3) * (2 * 3 * 3));
}

TEST(FlopCounter, NestedCountersBothCountAndNothingCountsOutside) {
  matmul(randn({4, 4}), randn({4, 4}));
  FlopCounter outer;
  EXPECT_EQ(outer.flops(), 0);
  {
    FlopCounter inner;
    matmul(randn({2, 3}), randn({3, 4}));
    EXPECT_EQ(inner.flops(), 2 * 2 * 4 * 3);
  }
  matmul(randn({2, 3}), randn({3, 4}));
  EXPECT_EQ(outer.flops(), 2 * (2 * 2 * 4 * 3));
}

}  // namespace
}  // namespace minidl
