// flip, roll, repeat, repeat_interleave and pad, and the linear-algebra compositions addmm,
// baddbmm and outer: PyTorch 2.15's values (printed by torch on the CPU for these inputs),
// gradients, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/nn/functional.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/shape.h"
#include "reference_entry.h"
#include "shape_ops_reference.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

Tensor grid() { return arange(0, 12, 1, kFloat32).view({3, 4}); }

std::vector<float> values(const Tensor& t) { return to_vector<float>(t); }

TEST(Rearrange, FlipAndRollAsTorch) {
  EXPECT_EQ(values(flip(grid(), {0, 1})),
            (std::vector<float>{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(values(flip(grid(), {-1})), (std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}));
  EXPECT_EQ(values(roll(grid(), {1, -1}, {0, 1})),
            (std::vector<float>{9, 10, 11, 8, 1, 2, 3, 0, 5, 6, 7, 4}));
  EXPECT_EQ(values(roll(grid(), {5})), (std::vector<float>{7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(roll(grid(), {5}).sizes(), (Shape{3, 4}));
  EXPECT_ERROR_CONTAINS(flip(grid(), {1, -1}), "flip: dim -1 appears more than once in [1, -1]");
  EXPECT_ERROR_CONTAINS(roll(grid(), {1, 2}, {0}),
                        "roll: expected as many shifts as dims, got shifts [1, 2] and dims [0]");
}

TEST(Rearrange, RepeatAndRepeatInterleaveAsTorch) {
  const Tensor corner = grid().narrow(0, 0, 2).narrow(1, 0, 2);  // [[0, 1], [4, 5]], a view
  const Tensor tiled = repeat(corner, {2, 1, 3});
  EXPECT_EQ(tiled.sizes(), (Shape{2, 2, 6}));
  EXPECT_EQ(values(tiled), (std::vector<float>{0, 1, 0, 1, 0, 1, 4, 5, 4, 5, 4, 5,
                                               0, 1, 0, 1, 0, 1, 4, 5, 4, 5, 4, 5}));
  EXPECT_EQ(values(repeat_interleave(corner, 2, 1)), (std::vector<float>{0, 0, 1, 1, 4, 4, 5, 5}));
  EXPECT_EQ(values(repeat_interleave(grid().narrow(0, 0, 1).narrow(1, 0, 3), 2)),
            (std::vector<float>{0, 0, 1, 1, 2, 2}));
  EXPECT_ERROR_CONTAINS(
      repeat(grid(), {2}),
      "repeat: expected at least 2 repeats for a tensor of shape [3, 4], got [2]");
}

TEST(Rearrange, PadConstantAndReflectAsTorch) {
  const Tensor corner = grid().narrow(0, 0, 2).narrow(1, 0, 2);
  const Tensor padded = pad(corner, {1, 2, 0, 1}, PadMode::Constant, 9);
  EXPECT_EQ(padded.sizes(), (Shape{3, 5}));
  EXPECT_EQ(values(padded), (std::vector<float>{9, 0, 1, 9, 9, 9, 4, 5, 9, 9, 9, 9, 9, 9, 9}));
  EXPECT_EQ(values(pad(grid(), {-1, 1})),
            (std::vector<float>{1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0}));
  EXPECT_EQ(
      values(pad(grid().view({1, 3, 4}), {2, 1}, PadMode::Reflect)),
      (std::vector<float>{2, 1, 0, 1, 2, 3, 2, 6, 5, 4, 5, 6, 7, 6, 10, 9, 8, 9, 10, 11, 10}));
  EXPECT_EQ(values(pad(grid().view({1, 1, 3, 4}), {1, 1, 2, 1}, PadMode::Reflect)),
            (std::vector<float>{9, 8, 9, 10, 11, 10, 5, 4, 5, 6,  7,  6,  1, 0, 1, 2, 3, 2,
                                5, 4, 5, 6,  7,  6,  9, 8, 9, 10, 11, 10, 5, 4, 5, 6, 7, 6}));
  EXPECT_ERROR_CONTAINS(pad(grid(), {4, 0}, PadMode::Reflect),
                        "pad: reflect padding of dimension 1 must be less than its size 4, got 4 "
                        "and 0");
  EXPECT_ERROR_CONTAINS(pad(grid(), {1}), "pad: expected an even number of paddings");
}

struct PadCase {
  const char* name;
  Shape shape;
  Shape padding;
  PadMode mode;
  const testing::ReferenceEntry& output;
  const testing::ReferenceEntry& grad;
};

// The cases of tools/reference/make_shape_ops_reference.py's PAD_CASES.
std::vector<PadCase> pad_cases() {
  using namespace testing;
  return {
      {"Reflect2d", {1, 2, 3, 4}, {2, 1, 1, 2}, kReflect, kPadReflect2dOutput, kPadReflect2dGrad0},
      {"Reflect1dNegative",
       {2, 5},
       {-1, 3},
       kReflect,
       kPadReflect1dNegativeOutput,
       kPadReflect1dNegativeGrad0},
      {"Replicate2d",
       {1, 2, 3, 4},
       {3, 1, -1, 2},
       kReplicate,
       kPadReplicate2dOutput,
       kPadReplicate2dGrad0},
      {"Replicate3d",
       {1, 2, 3, 4},
       {1, 1, 1, 0, 1, 1},
       kReplicate,
       kPadReplicate3dOutput,
       kPadReplicate3dGrad0},
      {"Circular2d", {2, 3, 4}, {4, 1, 3, 2}, kCircular, kPadCircular2dOutput, kPadCircular2dGrad0},
      {"Circular1dNegative",
       {1, 2, 5},
       {-2, 3},
       kCircular,
       kPadCircular1dNegativeOutput,
       kPadCircular1dNegativeGrad0},
  };
}

TEST(Rearrange, PadModesMatchPyTorchValuesAndGradients) {
  namespace F = nn::functional;
  for (const PadCase& c : pad_cases()) {
    EXPECT_TRUE(testing::matches_reference(
        [&](const std::vector<Tensor>& in) {
          return F::pad(in[0], F::PadFuncOptions(c.padding).mode(c.mode));
        },
        {c.shape}, c.output, {c.grad}))
        << c.name;
    auto result =
        gradcheck([&](const std::vector<Tensor>& in) { return pad(in[0], c.padding, c.mode); },
                  {testing::wiggly(c.shape, 0.2, kFloat64).requires_grad_()});
    EXPECT_TRUE(result) << c.name << ": " << result.message;
  }
  // The constant mode through the options, with its fill value.
  EXPECT_EQ(values(F::pad(grid(), F::PadFuncOptions({1, 0}).value(-2))),
            values(pad(grid(), {1, 0}, PadMode::Constant, -2)));
}

TEST(Rearrange, PadModesRefuseWhatPyTorchRefuses) {
  namespace F = nn::functional;
  const Tensor x = zeros({1, 3, 4});
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({4, 0}).mode(kReflect)),
                        "pad: reflect padding of dimension 2 must be less than its size 4, got 4 "
                        "and 0");
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({0, 5}).mode(kCircular)),
                        "pad: circular padding of dimension 2 must be at most its size 4 (it "
                        "wraps around once), got 0 and 5");
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({1, 0}).mode(kReflect).value(2)),
                        "pad: padding mode \"reflect\" doesn't take a value argument, got value 2");
  EXPECT_ERROR_CONTAINS(F::pad(zeros({3}), F::PadFuncOptions({1, 1}).mode(kReplicate)),
                        "pad: replicate padding of 2 values is not supported for a 1-D input of "
                        "shape [3]; expected 2 values for a 2-D or 3-D input");
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({1, 1, 1, 1, 1, 1}).mode(kReplicate)),
                        "pad: replicate padding of 6 values is not supported for a 3-D input");
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({-3, -1}).mode(kReplicate)),
                        "pad: replicate padding (-3, -1) of dimension 2 of size 4 leaves no "
                        "elements");
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({1, 1, 1})), "pad: expected an even number");
  EXPECT_ERROR_CONTAINS(F::pad(x, F::PadFuncOptions({-4, 3}).mode(kCircular)),
                        "pad: circular padding (-4, 3) of dimension 2 of size 4 crops every "
                        "element");
}

TEST(Rearrange, GradientsFlowBackToTheSourceElements) {
  const Tensor x = testing::wiggly({3, 4}, 0.3, kFloat64).requires_grad_();
  for (const auto& [name, fn] :
       std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>>{
           {"flip",
            [](const Tensor& t) {
              return flip(t, {0, 1});
            }},
           {"roll",
            [](const Tensor& t) {
              return roll(t, {1, 3}, {0, 1});
            }},
           {"repeat",
            [](const Tensor& t) {
              return repeat(t, {2, 1, 2});
            }},
           {"repeat_interleave", [](const Tensor& t) { return repeat_interleave(t, 3, 0); }},
           {"pad constant",
            [](const Tensor& t) {
              return pad(t, {1, 2, -1, 1});
            }},
           {"pad reflect",
            [](const Tensor& t) {
              return pad(t.unsqueeze(0), {2, 1, 1, 2}, PadMode::Reflect);
            }},
       }) {
    // A reference of its own: clang 14 (clang-tidy's) cannot capture a structured binding.
    const auto& op = fn;
    auto result = gradcheck([&](const std::vector<Tensor>& in) { return op(in[0]); }, {x});
    EXPECT_TRUE(result) << name << ": " << result.message;
  }
}

TEST(LinalgCompositions, AddmmBaddbmmAndOuterAsTorch) {
  const Tensor a = grid().narrow(0, 0, 2).narrow(1, 0, 3), b = grid().narrow(1, 0, 2);
  EXPECT_EQ(values(addmm(ones({2, 2}), a, b, 0.5, 2)),
            (std::vector<float>{40.5f, 46.5f, 136.5f, 166.5f}));
  EXPECT_EQ(values(outer(tensor({1.0, 2.0}), tensor({3.0, 4.0, 5.0}))),
            (std::vector<float>{3, 4, 5, 6, 8, 10}));
  const Tensor batch_a = testing::wiggly({2, 3, 4}, 0.1), batch_b = testing::wiggly({2, 4, 5}, 0.7);
  const Tensor input = testing::wiggly({5}, 0.2);
  EXPECT_TRUE(all_close(baddbmm(input, batch_a, batch_b, 0.3, -1.5),
                        input * 0.3 + matmul(batch_a, batch_b) * -1.5, 1e-6, 1e-6));
  // beta 0 ignores the input, NaN included, as PyTorch.
  EXPECT_EQ(values(addmm(full({2, 2}, NAN), a, b, 0)), values(matmul(a, b)));
  EXPECT_ERROR_CONTAINS(addmm(ones({2}), zeros({2}), zeros({2})),
                        "addmm: expected 2-D matrices, got shapes [2] and [2]");
  EXPECT_ERROR_CONTAINS(outer(zeros({2, 1}), zeros({2})), "outer: expected 1-D vectors");
  auto result =
      gradcheck([](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 0.5, 2); },
                {testing::wiggly({3}, 0.1, kFloat64).requires_grad_(),
                 testing::wiggly({2, 4}, 0.2, kFloat64).requires_grad_(),
                 testing::wiggly({4, 3}, 0.3, kFloat64).requires_grad_()});
  EXPECT_TRUE(result) << result.message;
}

}  // namespace
}  // namespace minidl
