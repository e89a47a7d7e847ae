// conv1d on the CPU (PyTorch's values are in tests/nn/layers_reference_test.cpp): a hand-worked
// output, agreement with conv2d over a unit height, channels and dtypes, every argument error,
// and f64 gradient checks of input, weight and bias.
#include "minidl/ops/conv1d.h"

#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/conv.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

Tensor wiggly(const Shape& sizes, double phase = 0.0, DType dtype = kFloat64) {
  return testing::wiggly(sizes, phase, dtype);
}

TEST(Conv1d, HandWorkedStrideTwoAndPadding) {
  // x = [1, 2, 3, 4, 5] padded to [0, 1, 2, 3, 4, 5, 0], kernel [1, 10], stride 2: windows at
  // 0, 2 and 4 (L_out = (5 + 2 - 1 - 1) / 2 + 1 = 3).
  const Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 5}, {1, 1, 5});
  const Tensor w = tensor(std::vector<double>{1, 10}, {1, 1, 2});
  const Tensor y = conv1d(x, w, tensor(std::vector<double>{100}), 2, 1);
  EXPECT_TRUE(all_close(y, tensor(std::vector<double>{110, 132, 154}, {1, 1, 3}), 0, 0));
}

TEST(Conv1d, IsConv2dOverAUnitHeight) {
  for (DType dtype : {kFloat32, kFloat64}) {
    const Tensor x = wiggly({2, 4, 11}, 0.0, dtype), w = wiggly({6, 2, 3}, 1.0, dtype);
    const Tensor b = wiggly({6}, 2.0, dtype);
    const Tensor y = conv1d(x, w, b, 2, 1, 2, 2);
    const Tensor expected =
        conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2}, {0, 1}, {1, 2}, 2).squeeze(2);
    EXPECT_EQ(y.sizes(), (Shape{2, 6, 5}));
    EXPECT_TRUE(all_close(y, expected, 0, 0)) << dtype;
  }
}

TEST(Conv1d, BadArgumentsAreErrorsNamingTheOpExpectedAndFound) {
  const Tensor x = zeros({2, 4, 8}), w = zeros({6, 2, 3});
  EXPECT_ERROR_CONTAINS(conv1d(Tensor(), w), "conv1d: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(conv1d(zeros({2, 4, 8, 1}), w),
                        "conv1d: expected a 3-D input [N, C_in, L], got shape [2, 4, 8, 1]");
  EXPECT_ERROR_CONTAINS(conv1d(x, zeros({6, 2})),
                        "conv1d: expected a 3-D weight [C_out, C_in / groups, k], got shape "
                        "[6, 2]");
  EXPECT_ERROR_CONTAINS(conv1d(x, w),
                        "conv1d: channel mismatch: input of shape [2, 4, 8] has C_in = 4, but "
                        "weight of shape [6, 2, 3] with groups = 1 expects weight.size(1) * "
                        "groups = 2");
  EXPECT_ERROR_CONTAINS(conv1d(x, zeros({3, 1, 3}), Tensor(), 1, 0, 1, 4),
                        "conv1d: groups = 4 must divide the output channels C_out = 3");
  EXPECT_ERROR_CONTAINS(conv1d(x, w, zeros({5}), 1, 0, 1, 2),
                        "conv1d: expected a bias of shape [6]");
  EXPECT_ERROR_CONTAINS(conv1d(x, w, Tensor(), 0, 0, 1, 2),
                        "conv1d: expected a positive stride, got 0");
  EXPECT_ERROR_CONTAINS(conv1d(x, w, Tensor(), 1, -1, 1, 2),
                        "conv1d: expected a non-negative padding, got -1");
  EXPECT_ERROR_CONTAINS(conv1d(x, w, Tensor(), 1, 0, 0, 2),
                        "conv1d: expected a positive dilation, got 0");
  EXPECT_ERROR_CONTAINS(conv1d(x, w, Tensor(), 1, 0, 1, 0), "conv1d: expected groups >= 1, got 0");
  EXPECT_ERROR_CONTAINS(conv1d(x, w, Tensor(), 1, 0, 4, 2),
                        "conv1d: kernel larger than the padded input: the (dilated) kernel is 9 "
                        "long but the padded input is 8");
  EXPECT_ERROR_CONTAINS(conv1d(x, zeros({6, 4, 3}, kFloat64)), "conv2d: expected input, weight");
}

TEST(Conv1dGradcheck, InputWeightAndBias) {
  struct Case {
    Shape input, weight;
    int64_t stride, padding, dilation, groups;
    bool bias;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 6}, {4, 3, 3}, 1, 0, 1, 1, true},
                                         {{1, 4, 9}, {6, 2, 2}, 2, 1, 2, 2, true},
                                         {{2, 2, 5}, {2, 2, 3}, 1, 2, 1, 1, false}}) {
    std::vector<Tensor> inputs{wiggly(c.input).requires_grad_(),
                               wiggly(c.weight, 1.0).requires_grad_()};
    if (c.bias) inputs.push_back(wiggly({c.weight[0]}, 2.0).requires_grad_());
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return conv1d(in[0], in[1], c.bias ? in[2] : Tensor(), c.stride, c.padding, c.dilation,
                        c.groups);
        },
        inputs);
    EXPECT_TRUE(result) << result.message;
  }
}

}  // namespace
}  // namespace minidl
