// softmax, log_softmax and the losses on the CPU: hand-worked values, stability, layouts,
// errors, and f64 gradient checks.
#include "minidl/ops/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "minidl/core/autograd/gradcheck.h"
#include "minidl/ops/shape.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct values in [-amplitude, amplitude].
Tensor wiggly_tensor(const Shape& sizes, double amplitude = 2.0) {
  return testing::wiggly(sizes, kFloat64, {.amplitude = amplitude, .start = 0.3, .step = 1.3});
}

Tensor log_of(std::initializer_list<double> values, const Shape& sizes) {
  std::vector<double> logs;
  for (double v : values) logs.push_back(std::log(v));
  return from_host(logs.data(), sizes, kFloat64);
}

Tensor doubles(std::initializer_list<double> values, const Shape& sizes) {
  return tensor(values, kFloat64).view(sizes);
}

// ---- softmax, log_softmax ----

TEST(Softmax, HandWorkedValues) {
  // softmax(log [1, 2, 3]) = [1, 2, 3] / 6.
  Tensor x = log_of({1, 2, 3, 1, 1, 2}, {2, 3});
  EXPECT_TRUE(
      all_close(softmax(x, 1), doubles({1. / 6, 2. / 6, 3. / 6, .25, .25, .5}, {2, 3}), 1e-12));
  EXPECT_TRUE(
      all_close(log_softmax(x, -1), log_of({1. / 6, 2. / 6, 3. / 6, .25, .25, .5}, {2, 3}), 1e-12));
  // Along dim 0: columns (1, 1), (2, 1), (3, 2).
  EXPECT_TRUE(all_close(softmax(x, 0), doubles({.5, 2. / 3, .6, .5, 1. / 3, .4}, {2, 3}), 1e-12));
  EXPECT_EQ(softmax(x.to(kFloat32), 1).dtype(), kFloat32);
  EXPECT_EQ(softmax(x.to(kFloat16), 1).dtype(), kFloat16);
  EXPECT_EQ(log_softmax(x.to(kBFloat16), 1).dtype(), kBFloat16);
  EXPECT_TRUE(all_close(softmax(x.to(kFloat16), 1), softmax(x, 1), 1e-3, 1e-2));
}

TEST(Softmax, LargeLogitsStayFinite) {
  Tensor x = tensor({1000, 1000, -1000, 0}, kFloat32);
  EXPECT_TRUE(all_close(softmax(x.view({2, 2}), 1), tensor({.5, .5, 0, 1}).view({2, 2})));
  EXPECT_TRUE(all_close(log_softmax(x.view({2, 2}), 1),
                        tensor({-std::log(2.0), -std::log(2.0), -1000, 0}).view({2, 2}), 1e-4));
}

TEST(Softmax, MiddleDimAndTransposedInputMatchTheLastDimResult) {
  Tensor x = wiggly_tensor({2, 3, 4});
  // softmax over dim 1 equals softmax over the last dim of the tensor with dims 1 and 2 swapped.
  Tensor moved = x.transpose(1, 2).contiguous();
  EXPECT_TRUE(all_close(softmax(x, 1), softmax(moved, 2).transpose(1, 2).contiguous(), 1e-12));
  EXPECT_TRUE(
      all_close(log_softmax(x, -2), log_softmax(moved, -1).transpose(1, 2).contiguous(), 1e-12));
  EXPECT_TRUE(all_close(softmax(x.transpose(1, 2), 2), softmax(moved, 2), 1e-12));
  EXPECT_EQ(softmax(scalar_tensor(5.0), 0).item<float>(), 1.0f);
  EXPECT_EQ(softmax(zeros({0, 3}), 1).sizes(), (Shape{0, 3}));
}

TEST(Softmax, BadInputsAreErrorsNamingTheOp) {
  EXPECT_ERROR_CONTAINS(softmax(arange(3), 0), "softmax: expected the input to be floating-point");
  EXPECT_ERROR_CONTAINS(log_softmax(arange(3), 0), "got int64");
  EXPECT_ERROR_CONTAINS(softmax(zeros({2, 3}), 2), "softmax: dimension out of range");
}

TEST(Softmax, TensorMethodsEqualTheFreeFunctions) {
  Tensor x = log_of({1, 2, 3, 1, 1, 2}, {2, 3});
  EXPECT_TRUE(
      all_close(x.softmax(1), doubles({1. / 6, 2. / 6, 3. / 6, .25, .25, .5}, {2, 3}), 1e-12));
  for (int64_t dim : {0, 1, -1}) {
    EXPECT_TRUE(all_close(x.softmax(dim), softmax(x, dim), 0, 0)) << "dim " << dim;
    EXPECT_TRUE(all_close(x.log_softmax(dim), log_softmax(x, dim), 0, 0)) << "dim " << dim;
  }
  EXPECT_ERROR_CONTAINS(arange(3).log_softmax(0), "log_softmax: expected the input to be");
  // Recorded as the free functions are: the gradient of sum(softmax) is zero.
  Tensor leaf = wiggly_tensor({2, 3}).requires_grad_();
  auto method =
      gradcheck([](const std::vector<Tensor>& in) { return in[0].log_softmax(1); }, {leaf});
  EXPECT_TRUE(method) << method.message;
  Tensor fresh = wiggly_tensor({2, 3}).requires_grad_();  // gradcheck leaves leaf.grad() set
  fresh.softmax(0).sum().backward();
  EXPECT_TRUE(all_close(fresh.grad(), zeros({2, 3}, kFloat64), 1e-12));
}

TEST(SoftmaxGradcheck, EveryDimAndTransposedInput) {
  Tensor x = wiggly_tensor({2, 3, 4}).requires_grad_();
  for (int64_t dim : {0, 1, 2, -1}) {
    auto s = gradcheck([&](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, {x});
    EXPECT_TRUE(s) << "softmax dim " << dim << ": " << s.message;
    auto l = gradcheck([&](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); }, {x});
    EXPECT_TRUE(l) << "log_softmax dim " << dim << ": " << l.message;
  }
  auto transposed = gradcheck(
      [](const std::vector<Tensor>& in) { return log_softmax(in[0].transpose(0, 2), 1); }, {x});
  EXPECT_TRUE(transposed) << transposed.message;
}

// ---- cross_entropy ----

// Worked by hand: row 0 has p = [1/6, 1/3, 1/2] and target 2, row 1 has p = [1/4, 1/4, 1/2]
// and target 0, so the per-row losses are -log(1/2) = ln 2 and -log(1/4) = 2 ln 2.
struct HandExample {
  Tensor logits = log_of({1, 2, 3, 1, 1, 2}, {2, 3});
  Tensor target = tensor(std::vector<int64_t>{2, 0});
};

TEST(CrossEntropy, HandWorkedValuesForEachReduction) {
  HandExample ex;
  const double ln2 = std::log(2.0);
  EXPECT_TRUE(all_close(cross_entropy(ex.logits, ex.target, Reduction::None),
                        doubles({ln2, 2 * ln2}, {2}), 1e-12));
  EXPECT_NEAR(cross_entropy(ex.logits, ex.target, Reduction::Sum).item<double>(), 3 * ln2, 1e-12);
  EXPECT_NEAR(cross_entropy(ex.logits, ex.target).item<double>(), 1.5 * ln2, 1e-12);
  EXPECT_EQ(cross_entropy(ex.logits, ex.target).dim(), 0);
  EXPECT_EQ(cross_entropy(ex.logits.to(kFloat32), ex.target).dtype(), kFloat32);
  EXPECT_EQ(cross_entropy(ex.logits.to(kFloat16), ex.target).dtype(), kFloat16);
}

TEST(CrossEntropy, HandWorkedValuesWithLabelSmoothing) {
  // loss = (1 - s) * nll + s * mean_c(-log p_c). Row 0: mean_c(-log p_c) = (ln 6 + ln 3 + ln 2)/3
  // = ln(36)/3; row 1: (ln 4 + ln 4 + ln 2)/3 = 5 ln 2 / 3.
  HandExample ex;
  const double s = 0.3, ln2 = std::log(2.0);
  const double row0 = (1 - s) * ln2 + s * std::log(36.0) / 3;
  const double row1 = (1 - s) * 2 * ln2 + s * 5 * ln2 / 3;
  EXPECT_TRUE(all_close(cross_entropy(ex.logits, ex.target, Reduction::None, s),
                        doubles({row0, row1}, {2}), 1e-12));
  EXPECT_NEAR(cross_entropy(ex.logits, ex.target, Reduction::Sum, s).item<double>(), row0 + row1,
              1e-12);
  EXPECT_NEAR(cross_entropy(ex.logits, ex.target, Reduction::Mean, s).item<double>(),
              (row0 + row1) / 2, 1e-12);
}

TEST(CrossEntropy, HandWorkedGradient) {
  // d loss / d logits = (p - target distribution) / N for the mean; the distribution is
  // (1 - s) one_hot + s / C.
  for (double s : {0.0, 0.3}) {
    HandExample ex;
    Tensor logits = ex.logits.requires_grad_();
    cross_entropy(logits, ex.target, Reduction::Mean, s).backward();
    const double off = s / 3, on = 1 - s + s / 3;
    Tensor expected = doubles({(1. / 6 - off) / 2, (1. / 3 - off) / 2, (.5 - on) / 2,
                               (.25 - on) / 2, (.25 - off) / 2, (.5 - off) / 2},
                              {2, 3});
    EXPECT_TRUE(all_close(logits.grad(), expected, 1e-12)) << "label_smoothing " << s;
  }
  // Reduction::None with a per-row gradient [1, 2]: row i is scaled by its own gradient.
  HandExample ex;
  Tensor logits = ex.logits.requires_grad_();
  cross_entropy(logits, ex.target, Reduction::None).backward(doubles({1, 2}, {2}));
  EXPECT_TRUE(all_close(logits.grad(),
                        doubles({1. / 6, 1. / 3, -.5, 2 * -.75, 2 * .25, 2 * .5}, {2, 3}), 1e-12));
}

// A class masked out with a -inf logit has probability 0 and no gradient; the loss stays finite
// (PyTorch 2.15: 1.3132616 for logits [0, -inf, 1] and target 0, gradient [-0.7311, 0, 0.7311]).
TEST(CrossEntropy, AMaskedClassWithAMinusInfinityLogitKeepsTheLossFinite) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {kFloat64, kFloat32}) {
    Tensor logits = tensor({0.0, -inf, 1.0, 2.0, -inf, -inf}).view({2, 3}).to(dtype);
    logits.requires_grad_();
    const Tensor target = tensor(std::vector<int64_t>{0, 0});
    const Tensor loss = cross_entropy(logits, target, Reduction::None);
    const double first = std::log(1 + std::exp(1.0)), second = 0.0;
    EXPECT_TRUE(all_close(loss.to(kFloat64), doubles({first, second}, {2}), 1e-6)) << loss;
    loss.sum().backward();
    const double p0 = 1 / (1 + std::exp(1.0));
    EXPECT_TRUE(
        all_close(logits.grad().to(kFloat64), doubles({p0 - 1, 0, 1 - p0, 0, 0, 0}, {2, 3}), 1e-6))
        << logits.grad();
  }
}

TEST(CrossEntropy, AgreesWithNllOfLogSoftmaxOnLargeLogits) {
  Tensor logits = wiggly_tensor({5, 7}, /*amplitude=*/200.0);
  Tensor target = tensor(std::vector<int64_t>{0, 6, 3, 3, 1});
  EXPECT_TRUE(all_close(cross_entropy(logits, target, Reduction::None),
                        nll_loss(log_softmax(logits, 1), target, Reduction::None), 1e-10, 1e-12));
}

TEST(CrossEntropy, BadInputsAreErrorsNamingTheOpShapesAndDtypes) {
  Tensor logits = zeros({2, 3});
  Tensor target = tensor(std::vector<int64_t>{0, 1});
  EXPECT_ERROR_CONTAINS(cross_entropy(logits, tensor(std::vector<int64_t>{0, 3})),
                        "cross_entropy: target 3 at index 1 is out of range for 3 classes "
                        "(expected 0 <= target < 3, or ignore_index -100)");
  EXPECT_ERROR_CONTAINS(cross_entropy(logits, tensor(std::vector<int64_t>{-1, 0})),
                        "cross_entropy: target -1 at index 0 is out of range for 3 classes");
  EXPECT_ERROR_CONTAINS(cross_entropy(logits, tensor(std::vector<int32_t>{0, 1})),
                        "cross_entropy: expected target of dtype int64 (class indices), got int32");
  EXPECT_ERROR_CONTAINS(cross_entropy(logits, tensor(std::vector<int64_t>{0, 1, 2})),
                        "cross_entropy: expected target of shape [2] for logits of shape [2, 3], "
                        "got target of shape [3]");
  EXPECT_ERROR_CONTAINS(cross_entropy(logits, target.view({2, 1})), "got target of shape [2, 1]");
  EXPECT_ERROR_CONTAINS(cross_entropy(zeros({2, 3, 4}), target),
                        "cross_entropy: expected logits of shape [N, C], got shape [2, 3, 4]");
  EXPECT_ERROR_CONTAINS(cross_entropy(zeros({2, 3}, kInt64), target),
                        "cross_entropy: expected logits to be floating-point");
  EXPECT_ERROR_CONTAINS(cross_entropy(logits, target, Reduction::Mean, 1.5),
                        "cross_entropy: expected label_smoothing in [0, 1], got 1.5");
  EXPECT_ERROR_CONTAINS(cross_entropy(zeros({2, 0}), target),
                        "cross_entropy: expected at least one class, got logits of shape [2, 0]");
}

TEST(CrossEntropyGradcheck, EachReductionWithAndWithoutSmoothingAndTransposedLogits) {
  Tensor logits = wiggly_tensor({4, 5}).requires_grad_();
  Tensor target = tensor(std::vector<int64_t>{4, 0, 2, 2});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    for (double s : {0.0, 0.2}) {
      auto result = gradcheck(
          [&](const std::vector<Tensor>& in) { return cross_entropy(in[0], target, reduction, s); },
          {logits});
      EXPECT_TRUE(result) << "reduction " << static_cast<int>(reduction) << ", smoothing " << s
                          << ": " << result.message;
    }
  }
  Tensor columns = wiggly_tensor({5, 4}).requires_grad_();
  auto transposed = gradcheck(
      [&](const std::vector<Tensor>& in) { return cross_entropy(in[0].t(), target); }, {columns});
  EXPECT_TRUE(transposed) << transposed.message;
}

// ---- ignore_index ----

// The rows of `target` that are not ignore_index, and those rows of `logits`.
std::pair<Tensor, Tensor> kept_rows(const Tensor& logits, const std::vector<int64_t>& target,
                                    int64_t ignore_index) {
  std::vector<int64_t> rows, classes;
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] != ignore_index) {
      rows.push_back(static_cast<int64_t>(i));
      classes.push_back(target[i]);
    }
  return {index_select(logits, 0, tensor(rows)), tensor(classes)};
}

TEST(CrossEntropy, IgnoredRowsAddNothingAndTheMeanCountsTheOthers) {
  const std::vector<int64_t> target = {4, -100, 2, -100, 0};
  for (double smoothing : {0.0, 0.2}) {
    Tensor logits = wiggly_tensor({5, 5}).requires_grad_();
    Tensor loss = cross_entropy(logits, tensor(target), Reduction::Mean, smoothing);
    auto [kept_logits, kept_target] = kept_rows(logits.detach(), target, -100);
    // The mean over the three kept rows, as if the ignored rows were not there.
    EXPECT_TRUE(all_close(loss, cross_entropy(kept_logits, kept_target, Reduction::Mean, smoothing),
                          1e-14));
    Tensor per_row = cross_entropy(logits, tensor(target), Reduction::None, smoothing);
    EXPECT_EQ(to_vector<double>(per_row)[1], 0.0);
    EXPECT_EQ(to_vector<double>(per_row)[3], 0.0);
    loss.backward();
    const std::vector<double> grad = to_vector<double>(logits.grad());
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(grad[1 * 5 + c], 0.0);
      EXPECT_EQ(grad[3 * 5 + c], 0.0);
    }
    Tensor kept_leaf = kept_logits.clone().requires_grad_();
    cross_entropy(kept_leaf, kept_target, Reduction::Mean, smoothing).backward();
    EXPECT_TRUE(all_close(index_select(logits.grad(), 0, tensor(std::vector<int64_t>{0, 2, 4})),
                          kept_leaf.grad(), 1e-14));
  }
  // Another ignore_index, a valid class: rows of class 2 are left out.
  Tensor logits = wiggly_tensor({5, 5});
  const std::vector<int64_t> classes = {4, 2, 2, 1, 0};
  auto [kept_logits, kept_target] = kept_rows(logits, classes, 2);
  EXPECT_TRUE(all_close(cross_entropy(logits, tensor(classes), Reduction::Sum, 0.0, 2),
                        cross_entropy(kept_logits, kept_target, Reduction::Sum), 1e-14));
  // Every row ignored: the mean is 0 / 0, as PyTorch's; the gradient is zero.
  Tensor all_ignored = wiggly_tensor({2, 3}).requires_grad_();
  Tensor nan_loss = cross_entropy(all_ignored, tensor(std::vector<int64_t>{-100, -100}));
  EXPECT_TRUE(std::isnan(nan_loss.item<double>()));
  nan_loss.backward();
  EXPECT_TRUE(all_close(all_ignored.grad(), zeros({2, 3}, kFloat64)));
}

TEST(CrossEntropyGradcheck, WithIgnoredRows) {
  Tensor logits = wiggly_tensor({4, 5}).requires_grad_();
  Tensor target = tensor(std::vector<int64_t>{4, -100, 2, 2});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) { return cross_entropy(in[0], target, reduction, 0.1); },
        {logits});
    EXPECT_TRUE(result) << result.message;
  }
}

TEST(NllLoss, IgnoredRowsAddNothing) {
  Tensor log_probs = doubles({-1, -2, -3, -4, -5, -6}, {2, 3}).requires_grad_();
  Tensor loss = nll_loss(log_probs, tensor(std::vector<int64_t>{1, -100}));
  EXPECT_EQ(loss.item<double>(), 2.0);  // the one kept row, not halved
  loss.backward();
  EXPECT_TRUE(all_close(log_probs.grad(), doubles({0, -1, 0, 0, 0, 0}, {2, 3})));
  EXPECT_EQ(
      nll_loss(log_probs, tensor(std::vector<int64_t>{1, 2}), Reduction::Sum, 2).item<double>(),
      2.0);
}

TEST(CrossEntropy, EmptyBatch) {
  Tensor none = cross_entropy(zeros({0, 3}), zeros({0}, kInt64), Reduction::None);
  EXPECT_EQ(none.sizes(), (Shape{0}));
  EXPECT_EQ(cross_entropy(zeros({0, 3}), zeros({0}, kInt64), Reduction::Sum).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(cross_entropy(zeros({0, 3}), zeros({0}, kInt64)).item<float>()));
}

// ---- nll_loss ----

TEST(NllLoss, HandWorkedValuesAndGradient) {
  Tensor log_probs = doubles({-1, -2, -3, -4, -5, -6}, {2, 3}).requires_grad_();
  Tensor target = tensor(std::vector<int64_t>{1, 2});
  EXPECT_TRUE(all_close(nll_loss(log_probs, target, Reduction::None), doubles({2, 6}, {2})));
  EXPECT_EQ(nll_loss(log_probs, target, Reduction::Sum).item<double>(), 8.0);
  Tensor loss = nll_loss(log_probs, target);
  EXPECT_EQ(loss.item<double>(), 4.0);
  loss.backward();
  EXPECT_TRUE(all_close(log_probs.grad(), doubles({0, -.5, 0, 0, 0, -.5}, {2, 3})));
}

TEST(NllLoss, BadInputsAreErrorsNamingTheOp) {
  Tensor log_probs = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(nll_loss(log_probs, tensor(std::vector<int64_t>{0, 5})),
                        "nll_loss: target 5 at index 1 is out of range for 3 classes");
  EXPECT_ERROR_CONTAINS(nll_loss(log_probs, tensor(std::vector<int64_t>{0})),
                        "nll_loss: expected target of shape [2] for log_probs of shape [2, 3], got "
                        "target of shape [1]");
  EXPECT_ERROR_CONTAINS(nll_loss(log_probs, zeros({2})),
                        "nll_loss: expected target of dtype int64 (class indices), got float32");
  EXPECT_ERROR_CONTAINS(nll_loss(zeros({6}), tensor(std::vector<int64_t>{0})),
                        "nll_loss: expected log_probs of shape [N, C], got shape [6]");
}

TEST(NllLossGradcheck, EachReduction) {
  Tensor log_probs = wiggly_tensor({3, 4}).requires_grad_();
  Tensor target = tensor(std::vector<int64_t>{3, 0, 3});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) { return nll_loss(in[0].t().t(), target, reduction); },
        {log_probs});
    EXPECT_TRUE(result) << result.message;
  }
}

// ---- mse_loss ----

TEST(MseLoss, HandWorkedValues) {
  Tensor input = tensor({1, 2, 3}, kFloat32);
  Tensor target = tensor({1, 0, 5}, kFloat32);  // squared errors 0, 4, 4
  EXPECT_TRUE(all_close(mse_loss(input, target, Reduction::None), tensor({0, 4, 4}, kFloat32)));
  EXPECT_FLOAT_EQ(mse_loss(input, target, Reduction::Sum).item<float>(), 8.0f);
  EXPECT_FLOAT_EQ(mse_loss(input, target).item<float>(), 8.0f / 3.0f);
}

TEST(MseLoss, BadInputsAreErrorsNamingTheOpShapesAndDtypes) {
  EXPECT_ERROR_CONTAINS(
      mse_loss(zeros({2, 3}), zeros({3})),
      "mse_loss: expected target of the input's shape [2, 3], got target of shape [3]");
  EXPECT_ERROR_CONTAINS(
      mse_loss(zeros({3}), zeros({3}, kFloat64)),
      "mse_loss: expected target of the input's dtype float32, got target of dtype float64");
  EXPECT_ERROR_CONTAINS(mse_loss(arange(3), arange(3)),
                        "mse_loss: expected input to be floating-point");
}

TEST(MseLossGradcheck, InputAndTarget) {
  Tensor input = wiggly_tensor({2, 3}).requires_grad_();
  Tensor target = wiggly_tensor({3, 2}).t().contiguous().requires_grad_();
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto result = gradcheck(
        [&](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1].t().t(), reduction); },
        {input, target});
    EXPECT_TRUE(result) << result.message;
  }
}

}  // namespace
}  // namespace minidl
