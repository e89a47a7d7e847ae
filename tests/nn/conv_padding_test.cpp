// The convolutions' padding as LibTorch's: kSame and kValid, padding_mode (zeros, reflect,
// replicate, circular) on Conv2d and Conv1d, F::conv2d / F::conv1d with kSame, and
// ConvTranspose2d's forward(input, output_size). The expected values are PyTorch 2.15's (the call
// beside each), on integer-valued inputs and weights, so exact in float32.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/nn/functional.h"
#include "minidl/nn/modules/conv.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;

// arange(1, 13).reshape(1, 1, 3, 4)
Tensor twelve() { return arange(1, 13, 1, kFloat32).view({1, 1, 3, 4}); }

// Conv2d(1, 1, (2, 3), padding=same, padding_mode=mode, bias=False) with weight
// [[1, 2, 3], [4, 5, 6]].
nn::Conv2d same_2x3(PadMode mode) {
  nn::Conv2d conv(nn::Conv2dOptions(1, 1, {2, 3}).padding(kSame).padding_mode(mode).bias(false));
  NoGradGuard no_grad;
  conv->weight.copy_(tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).view({1, 1, 2, 3}));
  return conv;
}

std::string repr(const nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

TEST(ConvPadding, SameWithEachPaddingModeAsPyTorch) {
  // torch.nn.Conv2d(1, 1, (2, 3), padding='same', padding_mode=mode, bias=False): the even
  // kernel's extra row goes after, as PyTorch pads it.
  const std::vector<std::pair<PadMode, std::vector<float>>> expected = {
      {kZeros, {69, 106, 127, 79, 133, 190, 211, 127, 48, 62, 68, 35}},
      {kReflect, {95, 106, 127, 130, 179, 190, 211, 214, 143, 154, 175, 178}},
      {kReplicate, {90, 106, 127, 139, 174, 190, 211, 223, 198, 214, 235, 247}},
      {kCircular, {105, 106, 127, 112, 189, 190, 211, 196, 93, 94, 115, 100}},
  };
  for (const auto& [mode, values] : expected) {
    const Tensor y = same_2x3(mode)->forward(twelve());
    EXPECT_EQ(y.sizes(), (Shape{1, 1, 3, 4}));
    EXPECT_EQ(to_vector<float>(y), values) << static_cast<int>(mode);
  }
}

TEST(ConvPadding, ReflectGradientsAsPyTorch) {
  // The same with padding_mode='reflect', backward of upstream arange(1, 13).
  nn::Conv2d conv = same_2x3(kReflect);
  const Tensor x = twelve().clone().requires_grad_();
  conv->forward(x).backward(twelve());
  EXPECT_EQ(to_vector<float>(x.grad()),
            (std::vector<float>{4, 11, 28, 17, 114, 255, 366, 201, 77, 175, 251, 139}));
  EXPECT_EQ(to_vector<float>(conv->weight.grad()),
            (std::vector<float>{602, 650, 680, 578, 626, 656}));
}

TEST(ConvPadding, NumbersValidDilatedSameAndOneDimensional) {
  // Conv2d(1, 1, (2, 3), padding=(1, 2), padding_mode='reflect'): [1, 1, 4, 6].
  nn::Conv2d reflect(nn::Conv2dOptions(1, 1, {2, 3}).padding({1, 2}).padding_mode(kReflect));
  {
    NoGradGuard no_grad;
    reflect->weight.copy_(same_2x3(kZeros)->weight);
    reflect->bias.zero_();
  }
  const Tensor y = reflect->forward(twelve());
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(to_vector<float>(y),
            (std::vector<float>{62,  59,  70,  91,  94,  83,  98,  95,  106, 127, 130, 119,
                                182, 179, 190, 211, 214, 203, 146, 143, 154, 175, 178, 167}));
  // Conv2d(1, 1, 3, padding='same', dilation=2) on arange(1, 26).reshape(1, 1, 5, 5).
  nn::Conv2d dilated(nn::Conv2dOptions(1, 1, 3).padding(kSame).dilation(2).bias(false));
  {
    NoGradGuard no_grad;
    dilated->weight.copy_(arange(1, 10, 1, kFloat32).view({1, 1, 3, 3}));
  }
  EXPECT_EQ(to_vector<float>(dilated->forward(arange(1, 26, 1, kFloat32).view({1, 1, 5, 5}))),
            (std::vector<float>{228, 256, 365, 224, 248, 368, 396, 560, 344, 368, 519, 552, 777,
                                474, 501, 224, 240, 326, 188, 200, 304, 320, 431, 248, 260}));
  // Conv1d(1, 1, 4, padding='same', padding_mode='circular'), weight [1, 10, 100, 1000].
  nn::Conv1d circular(
      nn::Conv1dOptions(1, 1, 4).padding(kSame).padding_mode(kCircular).bias(false));
  const Tensor digits = tensor({1.0f, 10.0f, 100.0f, 1000.0f}).view({1, 1, 4});
  {
    NoGradGuard no_grad;
    circular->weight.copy_(digits);
  }
  const Tensor six = arange(1, 7, 1, kFloat32).view({1, 1, 6});
  EXPECT_EQ(to_vector<float>(circular->forward(six)),
            (std::vector<float>{3216, 4321, 5432, 6543, 1654, 2165}));
  // F.conv1d(x, w, padding='valid') and F.conv2d(x, w, padding='same') with a 2 x 2 kernel.
  EXPECT_EQ(to_vector<float>(
                F::conv1d(six, digits.narrow(2, 0, 3), {}, F::Conv1dFuncOptions().padding(kValid))),
            (std::vector<float>{321, 432, 543, 654}));
  const Tensor x = twelve().clone().requires_grad_();
  const Tensor y2 = F::conv2d(x, tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 1, 2, 2}), {},
                              F::Conv2dFuncOptions().padding(kSame));
  EXPECT_EQ(to_vector<float>(y2),
            (std::vector<float>{44, 54, 64, 28, 84, 94, 104, 44, 29, 32, 35, 12}));
  y2.backward(twelve());
  EXPECT_EQ(to_vector<float>(x.grad()),
            (std::vector<float>{1, 4, 7, 10, 8, 26, 36, 46, 24, 66, 76, 86}));
}

TEST(ConvPadding, GradientsMatchCentralDifferences) {
  for (PadMode mode : {kZeros, kReflect, kReplicate, kCircular}) {
    nn::Conv2d conv(nn::Conv2dOptions(2, 3, {2, 3}).padding(kSame).padding_mode(mode));
    conv->to(kFloat64);
    const auto fn = [&conv](const std::vector<Tensor>& in) { return conv->forward(in[0]); };
    auto result = gradcheck(fn, {testing::wiggly({2, 2, 4, 5}, 0.3, kFloat64).requires_grad_()});
    EXPECT_TRUE(result) << static_cast<int>(mode) << ": " << result.message;
  }
}

TEST(ConvPadding, PrintsAsPyTorchAndRefusesSameWithAStride) {
  EXPECT_EQ(repr(*nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(kSame).padding_mode(kReflect))),
            "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same, "
            "padding_mode=reflect)");
  EXPECT_EQ(repr(*nn::Conv2d(nn::Conv2dOptions(3, 8, {2, 4}).padding(kValid))),
            "Conv2d(3, 8, kernel_size=(2, 4), stride=(1, 1), padding=valid)");
  EXPECT_EQ(repr(*nn::Conv1d(
                nn::Conv1dOptions(3, 8, 4).padding(kSame).padding_mode(kCircular).bias(false))),
            "Conv1d(3, 8, kernel_size=(4,), stride=(1,), padding=same, bias=false, "
            "padding_mode=circular)");
  EXPECT_EQ(repr(*nn::Conv1d(nn::Conv1dOptions(3, 8, 4).padding(2))),
            "Conv1d(3, 8, kernel_size=(4,), stride=(1,), padding=(2,))");
  EXPECT_ERROR_CONTAINS(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).stride(2).padding(kSame)),
                        "Conv2d: padding kSame ('same') is not supported for strided "
                        "convolutions, got stride 2");
  EXPECT_ERROR_CONTAINS(F::conv1d(zeros({1, 1, 5}), zeros({1, 1, 3}), {},
                                  F::Conv1dFuncOptions().stride(2).padding(kSame)),
                        "conv1d: padding kSame ('same') is not supported for strided convolutions");
  // Reflection needs more input than the padding it mirrors, as F.pad's.
  nn::Conv2d wide(nn::Conv2dOptions(1, 1, 5).padding(kSame).padding_mode(kReflect));
  EXPECT_ERROR_CONTAINS(wide->forward(zeros({1, 1, 2, 2})), "pad");
}

TEST(ConvPadding, ConvTransposeOutputSizeAsPyTorch) {
  // ConvTranspose2d(1, 1, 3, stride=2, padding=1, bias=False), weight of ones, on ones [1, 1, 2,
  // 2] with output_size=[4, 3].
  nn::ConvTranspose2d transposed(
      nn::ConvTranspose2dOptions(1, 1, 3).stride(2).padding(1).bias(false));
  {
    NoGradGuard no_grad;
    transposed->weight.fill_(1.0);
  }
  const Tensor y = transposed->forward(ones({1, 1, 2, 2}), Shape{4, 3});
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 4, 3}));
  EXPECT_EQ(to_vector<float>(y), (std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1, 1, 2, 1}));
  EXPECT_EQ(transposed->forward(ones({1, 1, 2, 2}), Shape{1, 1, 3, 4}).sizes(),
            (Shape{1, 1, 3, 4}));
  EXPECT_EQ(transposed->forward(ones({1, 1, 2, 2})).sizes(), (Shape{1, 1, 3, 3}));
  // ConvTranspose2d(4, 2, 3, stride=2, padding=1) on [1, 4, 5, 5], output_size=[12, 10].
  nn::ConvTranspose2d wide(nn::ConvTranspose2dOptions(4, 2, 3).stride(2).padding(1));
  EXPECT_ERROR_CONTAINS(wide->forward(zeros({1, 4, 5, 5}), Shape{12, 10}),
                        "ConvTranspose2d: requested an output size of [12, 10], but valid sizes "
                        "range from [9, 9] to [10, 10] (for an input of [5, 5])");
  EXPECT_ERROR_CONTAINS(wide->forward(zeros({1, 4, 5, 5}), Shape{10}),
                        "ConvTranspose2d: expected an output_size of 2 sizes");
}

}  // namespace
}  // namespace minidl
