// AccumulateGrad gives a leaf's .grad the leaf's memory format, as PyTorch's layout contract
// does: a channels-last leaf gets a channels-last gradient whatever layout the gradient
// arrives in, an NCHW leaf an NCHW one, and later accumulations keep it.
#include <gtest/gtest.h>

#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

Tensor channels_last_leaf() {
  return arange(2 * 3 * 4 * 5, TensorOptions(kFloat32))
      .reshape({2, 3, 4, 5})
      .contiguous(MemoryFormat::ChannelsLast)
      .requires_grad_();
}

TEST(AccumulateGradLayout, ABroadcastGradientOfAChannelsLastLeafIsStoredChannelsLast) {
  Tensor leaf = channels_last_leaf();
  leaf.sum().backward();  // the gradient arrives as a broadcast (stride 0) view of one value
  ASSERT_TRUE(leaf.grad().defined());
  EXPECT_EQ(leaf.grad().suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(leaf.grad(), ones({2, 3, 4, 5}), 0, 0));
}

TEST(AccumulateGradLayout, AnNchwGradientOfAChannelsLastLeafIsCopiedChannelsLast) {
  Tensor leaf = channels_last_leaf();
  const Tensor upstream = arange(120, TensorOptions(kFloat32)).reshape({2, 3, 4, 5});  // NCHW
  (leaf * 1.0).backward(upstream);
  EXPECT_EQ(leaf.grad().suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(leaf.grad(), upstream, 0, 0));
  // A second backward adds into the same channels-last gradient.
  (leaf * 1.0).backward(upstream);
  EXPECT_EQ(leaf.grad().suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(leaf.grad(), upstream * 2.0, 0, 0));
}

TEST(AccumulateGradLayout, AChannelsLastGradientOfAnNchwLeafIsCopiedNchw) {
  Tensor leaf = arange(120, TensorOptions(kFloat32)).reshape({2, 3, 4, 5}).requires_grad_();
  // contiguous(ChannelsLast)'s backward passes the channels-last upstream gradient through.
  const Tensor upstream = (arange(120, TensorOptions(kFloat32)) * 0.5)
                              .reshape({2, 3, 4, 5})
                              .contiguous(MemoryFormat::ChannelsLast);
  leaf.contiguous(MemoryFormat::ChannelsLast).backward(upstream);
  EXPECT_TRUE(leaf.grad().is_contiguous());
  EXPECT_TRUE(all_close(leaf.grad(), upstream, 0, 0));
}

}  // namespace
}  // namespace minidl
