#include "minidl/core/tensor.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace minidl {
namespace {

TEST(Tensor, FactoriesHaveShapeDtypeAndValues) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.strides(), (Shape{3, 1}));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(to_vector<float>(z), std::vector<float>(6, 0.0f));
  EXPECT_EQ(to_vector<double>(full({3}, 2.5, kFloat64)), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(to_vector<int64_t>(arange(5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(to_vector<float>(arange(1, 2, 0.25, kFloat32)),
            (std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f}));
  EXPECT_EQ(tensor(std::vector<int32_t>{1, 2, 3, 4}, {2, 2}).sizes(), (Shape{2, 2}));
  EXPECT_EQ(scalar_tensor(3.0).item<float>(), 3.0f);
}

TEST(Tensor, NegativeSizeIsAnError) {
  EXPECT_ERROR_CONTAINS(empty({2, -1}), "empty: sizes must be non-negative, got [2, -1]");
}

TEST(Tensor, ItemNeedsOneElement) {
  EXPECT_ERROR_CONTAINS(zeros({2}).item<float>(), "item: expected a tensor with one element");
}

TEST(Tensor, TransposeIsAViewThatSharesStorage) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  Tensor t = x.t();
  EXPECT_EQ(t.sizes(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage().get(), x.storage().get());
  EXPECT_EQ(to_vector<float>(t), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(to_vector<float>(t.contiguous()), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(t.contiguous().is_contiguous());
}

TEST(Tensor, ViewRefusesIncompatibleStridesAndReshapeCopies) {
  Tensor t = arange(6, kFloat32).view({2, 3}).t();
  EXPECT_ERROR_CONTAINS(t.view({6}), "view: shape [6] is not compatible");
  Tensor r = t.reshape({6});
  EXPECT_NE(r.storage().get(), t.storage().get());
  EXPECT_EQ(to_vector<float>(r), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(arange(12).view({3, -1}).sizes(), (Shape{3, 4}));
  EXPECT_ERROR_CONTAINS(arange(12).view({5, -1}),
                        "view: shape [5, -1] is invalid for input of size 12");
}

TEST(Tensor, SliceNarrowSelectSqueezeUnsqueezeFlatten) {
  Tensor x = arange(24, kFloat32).view({2, 3, 4});
  EXPECT_EQ(to_vector<float>(x.slice(2, 1, 4, 2)),
            (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  EXPECT_EQ(to_vector<float>(x.narrow(1, 1, 1).squeeze(1)),
            (std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_EQ(x.select(0, -1).sizes(), (Shape{3, 4}));
  EXPECT_EQ(to_vector<float>(x.select(0, -1).select(0, 0)), (std::vector<float>{12, 13, 14, 15}));
  EXPECT_EQ(x.unsqueeze(0).sizes(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).sizes(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.flatten(1).sizes(), (Shape{2, 12}));
  EXPECT_EQ(x.permute({2, 0, 1}).sizes(), (Shape{4, 2, 3}));
  EXPECT_ERROR_CONTAINS(x.permute({0, 0, 1}), "permute: dimension 0 repeats");
  EXPECT_ERROR_CONTAINS(x.narrow(1, 2, 2), "narrow: start 2 and length 2 are out of range");
  EXPECT_ERROR_CONTAINS(x.transpose(0, 3), "transpose: dimension out of range");
}

TEST(Tensor, ToKeepsADenseLayoutAndMakesOthersContiguous) {
  // PyTorch's preserve_format: a channels-last or transposed tensor keeps its strides through a
  // dtype conversion; a view with holes (a strided slice) comes out contiguous.
  const Tensor x = arange(2 * 3 * 4 * 5, kFloat32).view({2, 3, 4, 5});
  const Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast);
  const Tensor converted = nhwc.to(kBFloat16);
  EXPECT_TRUE(converted.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::bitwise_equal(converted.contiguous(), x.to(kBFloat16)));
  const Tensor transposed = x.transpose(1, 3).to(kFloat16);
  EXPECT_EQ(transposed.strides(), x.transpose(1, 3).strides());
  EXPECT_TRUE(
      testing::bitwise_equal(transposed.contiguous(), x.transpose(1, 3).contiguous().to(kFloat16)));
  const Tensor holes = x.slice(3, 0, 5, 2).to(kBFloat16);
  EXPECT_TRUE(holes.is_contiguous());
  EXPECT_TRUE(testing::bitwise_equal(holes, x.slice(3, 0, 5, 2).contiguous().to(kBFloat16)));
}

TEST(Tensor, ASlicesGradientTakesTheInputsLayout) {
  // A channels-last feature map's gradient stays channels-last through a slice (a ResNet's
  // strided shortcut), with zeros where the slice did not read.
  const Tensor x = arange(2 * 3 * 4 * 4, kFloat32)
                       .view({2, 3, 4, 4})
                       .contiguous(MemoryFormat::ChannelsLast)
                       .requires_grad_();
  x.slice(2, 0, 4, 2).slice(3, 0, 4, 2).sum().backward();
  EXPECT_TRUE(x.grad().is_contiguous(MemoryFormat::ChannelsLast));
  const auto grad = to_vector<float>(x.grad().contiguous());
  for (int64_t i = 0; i < static_cast<int64_t>(grad.size()); ++i) {
    const int64_t h = i / 4 % 4, w = i % 4;
    EXPECT_EQ(grad[static_cast<size_t>(i)], h % 2 == 0 && w % 2 == 0 ? 1.0f : 0.0f) << i;
  }
}

TEST(Tensor, ExpandBroadcastsWithZeroStrides) {
  Tensor x = arange(3, kFloat32).view({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_EQ(to_vector<float>(e.contiguous()).size(), 24u);
  EXPECT_ERROR_CONTAINS(x.expand({2, 2}), "expand: the size of shape [3, 1] must match [2, 2]");
}

TEST(Tensor, CopyConvertsDtypesAndBroadcasts) {
  Tensor dst = zeros({2, 3}, kInt32);
  dst.copy_(tensor({1.7, -2.2, 3.0}));
  EXPECT_EQ(to_vector<int32_t>(dst), (std::vector<int32_t>{1, -2, 3, 1, -2, 3}));
  Tensor h = tensor({1.0, 65504.0, 1e-8, -0.5}).to(kFloat16);
  EXPECT_EQ(to_vector<float>(h), (std::vector<float>{1.0f, 65504.0f, 0.0f, -0.5f}));
  Tensor b = tensor({1.0, 3.140625}).to(kBFloat16);
  EXPECT_EQ(to_vector<float>(b), (std::vector<float>{1.0f, 3.140625f}));
  EXPECT_EQ(to_vector<bool>(tensor({0.0, 2.0}).to(kBool)), (std::vector<bool>{false, true}));
  // Floating point to integers goes through int64, so negative values wrap (as in PyTorch).
  EXPECT_EQ(to_vector<int32_t>(tensor({-1.0, 300.0, -2.5}).to(kUInt8)),
            (std::vector<int32_t>{255, 44, 254}));
  const uint64_t version = dst.version();
  dst.fill_(7);
  EXPECT_EQ(dst.version(), version + 1);
  EXPECT_ERROR_CONTAINS(dst.copy_(zeros({4})), "copy_: shapes [2, 3] and [4] cannot be broadcast");
}

TEST(Tensor, FillAndZeroNameThemselvesInTheirErrors) {
  Tensor leaf = zeros({2}).requires_grad_();
  EXPECT_ERROR_CONTAINS(leaf.zero_(), "zero_: in-place operation on a tensor of shape [2]");
  EXPECT_ERROR_CONTAINS(leaf.fill_(1), "fill_: in-place operation on a tensor of shape [2]");
  Tensor undefined;
  EXPECT_ERROR_CONTAINS(undefined.zero_(), "zero_: argument 'self' is an undefined tensor");
  Tensor plain = ones({3});
  EXPECT_EQ(to_vector<float>(plain.zero_()), (std::vector<float>{0, 0, 0}));
}

TEST(Tensor, PrintsLikePyTorch) {
  EXPECT_EQ(arange(4, kFloat32).view({2, 2}).str(), "tensor([[0., 1.],\n        [2., 3.]])");
  EXPECT_EQ(arange(3).str(), "tensor([0, 1, 2])");
  EXPECT_EQ(tensor({1.5}, kFloat64).str(), "tensor([1.5000], dtype=torch.float64)");
}

TEST(Tensor, DeviceParsing) {
  EXPECT_EQ(Device("cuda:1"), Device(kCUDA, 1));
  EXPECT_EQ(Device("cpu"), Device(kCPU));
  EXPECT_EQ(Device("cuda").str(), "cuda:0");
  EXPECT_ERROR_CONTAINS(Device("gpu"),
                        "Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"gpu\"");
}

}  // namespace
}  // namespace minidl
