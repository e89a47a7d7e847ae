// The losses of ops/pointwise_loss.h (binary_cross_entropy_with_logits, binary_cross_entropy,
// smooth_l1_loss, l1_loss, huber_loss, kl_div), the weighted nll_loss and F::normalize: values and
// gradients against PyTorch's (tests/nn/loss_reference.h, written by
// tools/reference/make_loss_reference.py), f64 gradient checks, errors, autocast, and their
// modules.
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "loss_reference.h"
#include "minidl/core/autocast.h"
#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/pointwise_loss.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::kLossReference;

// The reference entry `name`, as a float64 CPU tensor of `sizes`, converted to `dtype`.
Tensor reference(const std::string& name, const Shape& sizes, DType dtype = kFloat64) {
  const auto found = kLossReference.find(name);
  MINIDL_CHECK(found != kLossReference.end(), "no reference entry ", name);
  MINIDL_CHECK(static_cast<int64_t>(found->second.size()) == shape_numel(sizes), "reference ", name,
               " has ", found->second.size(), " values, not ", shape_numel(sizes));
  return from_host(found->second.data(), sizes, kFloat64).to(dtype);
}

// One of the script's inputs (its "input.NAME" entry).
Tensor named_input(const std::string& name, const Shape& sizes, DType dtype = kFloat64) {
  return reference("input." + name, sizes, dtype);
}

bool has_reference(const std::string& name) { return kLossReference.count(name) > 0; }

Reduction reduction_named(const std::string& name) {
  if (name == "none") return Reduction::None;
  if (name == "sum") return Reduction::Sum;
  MINIDL_CHECK(name == "mean", "unknown reduction ", name);
  return Reduction::Mean;
}

KLDivReduction kl_reduction_named(const std::string& name) {
  if (name == "batchmean") return KLDivReduction::BatchMean;
  switch (reduction_named(name)) {
    case Reduction::None: return KLDivReduction::None;
    case Reduction::Sum: return KLDivReduction::Sum;
    case Reduction::Mean: return KLDivReduction::Mean;
  }
  return KLDivReduction::Mean;
}

constexpr const char* kReductions[] = {"none", "mean", "sum"};

// A case of the script: the loss of (input, target) under a reduction, in the inputs' dtype.
struct LossCase {
  std::string name;
  std::string input;
  Shape input_sizes;
  std::string target;
  Shape target_sizes;
  bool class_target;  // int64 class indices, not differentiable
  std::vector<std::string> reductions;
  std::function<Tensor(const Tensor& input, const Tensor& target, const std::string& reduction)>
      loss;
};

std::vector<LossCase> loss_cases() {
  const std::vector<std::string> reductions(std::begin(kReductions), std::end(kReductions));
  const std::vector<std::string> kl_reductions{"none", "batchmean", "sum", "mean"};
  const Shape grid{4, 3};
  auto bce_with_logits = [](const char* weight, const char* pos_weight, Shape weight_sizes) {
    return [=](const Tensor& x, const Tensor& y, const std::string& reduction) {
      auto options =
          F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(reduction_named(reduction));
      if (weight != nullptr) options.weight(named_input(weight, weight_sizes, x.dtype()));
      if (pos_weight != nullptr) options.pos_weight(named_input(pos_weight, {3}, x.dtype()));
      return F::binary_cross_entropy_with_logits(x, y, options);
    };
  };
  auto bce = [](const char* weight, Shape weight_sizes) {
    return [=](const Tensor& x, const Tensor& y, const std::string& reduction) {
      auto options = F::BinaryCrossEntropyFuncOptions().reduction(reduction_named(reduction));
      if (weight != nullptr) options.weight(named_input(weight, weight_sizes, x.dtype()));
      return F::binary_cross_entropy(x, y, options);
    };
  };
  auto smooth_l1 = [](double beta) {
    return [=](const Tensor& x, const Tensor& y, const std::string& reduction) {
      return F::smooth_l1_loss(
          x, y, F::SmoothL1LossFuncOptions().reduction(reduction_named(reduction)).beta(beta));
    };
  };
  const auto l1 = [](const Tensor& x, const Tensor& y, const std::string& reduction) {
    return F::l1_loss(x, y, F::L1LossFuncOptions().reduction(reduction_named(reduction)));
  };
  auto huber = [](double delta) {
    return [=](const Tensor& x, const Tensor& y, const std::string& reduction) {
      return F::huber_loss(
          x, y, F::HuberLossFuncOptions().reduction(reduction_named(reduction)).delta(delta));
    };
  };
  auto kl = [](bool log_target) {
    return [=](const Tensor& x, const Tensor& y, const std::string& reduction) {
      return F::kl_div(
          x, y,
          F::KLDivFuncOptions().reduction(kl_reduction_named(reduction)).log_target(log_target));
    };
  };
  auto nll = [](const char* weight, int64_t ignore_index) {
    return [=](const Tensor& x, const Tensor& y, const std::string& reduction) {
      auto options =
          F::NLLLossFuncOptions().reduction(reduction_named(reduction)).ignore_index(ignore_index);
      if (weight != nullptr) options.weight(named_input(weight, {3}, x.dtype()));
      return F::nll_loss(x, y, options);
    };
  };
  auto normalize = [](double p, int64_t dim) {
    return [=](const Tensor& x, const Tensor& upstream, const std::string&) {
      return mul(F::normalize(x, F::NormalizeFuncOptions().p(p).dim(dim)), upstream);
    };
  };
  const std::vector<std::string> none{"none"};
  return {
      {"bce_with_logits.plain", "logits", grid, "probability_target", grid, false, reductions,
       bce_with_logits(nullptr, nullptr, {})},
      {"bce_with_logits.weight", "logits", grid, "probability_target", grid, false, reductions,
       bce_with_logits("class_weight", nullptr, {3})},
      {"bce_with_logits.pos_weight", "logits", grid, "probability_target", grid, false, reductions,
       bce_with_logits(nullptr, "pos_weight", {})},
      {"bce_with_logits.both", "logits", grid, "probability_target", grid, false, reductions,
       bce_with_logits("row_weight", "pos_weight", {4, 1})},
      {"bce.plain", "probabilities", grid, "probability_target", grid, false, reductions,
       bce(nullptr, {})},
      {"bce.weight", "probabilities", grid, "probability_target", grid, false, reductions,
       bce("class_weight", {3})},
      {"bce.saturated", "saturated_probabilities", grid, "probability_target", grid, false,
       reductions, bce("row_weight", {4, 1})},
      {"smooth_l1.beta1", "regression_input", grid, "regression_target", grid, false, reductions,
       smooth_l1(1.0)},
      {"smooth_l1.beta0.5", "regression_input", grid, "regression_target", grid, false, reductions,
       smooth_l1(0.5)},
      {"smooth_l1.beta0", "regression_input", grid, "regression_target", grid, false, reductions,
       smooth_l1(0.0)},
      {"smooth_l1.broadcast",
       "regression_input",
       grid,
       "regression_row_target",
       {3},
       false,
       reductions,
       smooth_l1(0.5)},
      {"l1.plain", "regression_input", grid, "regression_target", grid, false, reductions, l1},
      {"l1.broadcast",
       "regression_input",
       grid,
       "regression_row_target",
       {3},
       false,
       reductions,
       l1},
      // Three elements where input == target: PyTorch's gradient there is 0.
      {"l1.ties", "regression_input", grid, "l1_tie_target", grid, false, reductions, l1},
      {"huber.delta1", "regression_input", grid, "regression_target", grid, false, reductions,
       huber(1.0)},
      {"huber.delta0.7", "regression_input", grid, "regression_target", grid, false, reductions,
       huber(0.7)},
      {"kl_div.probabilities", "kl_input", grid, "kl_target", grid, false, kl_reductions,
       kl(false)},
      {"kl_div.log_target", "kl_input", grid, "kl_log_target", grid, false, kl_reductions,
       kl(true)},
      {"nll.weight",
       "nll_log_probs",
       {5, 3},
       "nll_target",
       {5},
       true,
       reductions,
       nll("nll_weight", -100)},
      {"nll.weight_ignore2",
       "nll_log_probs",
       {5, 3},
       "nll_target_without_ignored",
       {5},
       true,
       reductions,
       nll("nll_weight", 2)},
      {"nll.ignore2",
       "nll_log_probs",
       {5, 3},
       "nll_target_without_ignored",
       {5},
       true,
       reductions,
       nll(nullptr, 2)},
      {"normalize.p2_dim1", "normalize_input", grid, "normalize_upstream", grid, false, none,
       normalize(2.0, 1)},
      {"normalize.p1_dim0", "normalize_input", grid, "normalize_upstream", grid, false, none,
       normalize(1.0, 0)},
  };
}

Tensor case_target(const LossCase& c, DType dtype) {
  return c.class_target ? named_input(c.target, c.target_sizes).to(kInt64)
                        : named_input(c.target, c.target_sizes, dtype);
}

TEST(LossReference, ValuesMatchPyTorchInFloat64AndFloat32ForEveryReduction) {
  int compared = 0;
  for (const LossCase& c : loss_cases()) {
    for (const std::string& reduction : c.reductions) {
      for (DType dtype : {kFloat64, kFloat32}) {
        const std::string name =
            c.name + "." + reduction + (dtype == kFloat64 ? ".float64" : ".float32");
        const Tensor out =
            c.loss(named_input(c.input, c.input_sizes, dtype), case_target(c, dtype), reduction);
        EXPECT_EQ(out.dtype(), dtype) << name;
        const Shape& sizes = out.sizes();
        const bool exact = dtype == kFloat64;
        EXPECT_TRUE(all_close(out, reference(name, sizes, dtype), exact ? 1e-12 : 1e-5,
                              exact ? 1e-10 : 1e-5))
            << name;
        ++compared;
      }
    }
  }
  int entries = 0;  // every value entry of the header, each compared once
  for (const auto& [name, numbers] : kLossReference)
    entries += name.rfind("input.", 0) != 0 && name.find(".grad_") == std::string::npos;
  EXPECT_EQ(compared, entries);
}

TEST(LossReference, GradientsMatchPyTorchsInFloat64) {
  for (const LossCase& c : loss_cases()) {
    Tensor input = named_input(c.input, c.input_sizes).requires_grad_(true);
    Tensor target = case_target(c, kFloat64);
    const std::string grad_target_name = c.name + ".grad_target.float64";
    if (has_reference(grad_target_name)) target.requires_grad_(true);
    sum(c.loss(input, target, c.reductions.front())).backward();
    EXPECT_TRUE(all_close(input.grad(), reference(c.name + ".grad_input.float64", c.input_sizes),
                          1e-12, 1e-9))
        << c.name;
    if (has_reference(grad_target_name))
      EXPECT_TRUE(
          all_close(target.grad(), reference(grad_target_name, c.target_sizes), 1e-12, 1e-9))
          << c.name;
  }
}

// gradcheck of loss(input, target) wrt both, for every reduction.
void expect_gradcheck(const std::string& what, const Tensor& input, const Tensor& target,
                      const std::function<Tensor(const Tensor&, const Tensor&, Reduction)>& loss,
                      bool check_target = true) {
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const Tensor x = input.detach().requires_grad_(true);
    const Tensor y = target.detach().requires_grad_(check_target);
    const GradcheckResult result = gradcheck(
        [&](const std::vector<Tensor>& in) { return loss(in[0], in[1], reduction); }, {x, y});
    EXPECT_TRUE(result.ok) << what << " reduction " << static_cast<int>(reduction) << ": "
                           << result.message;
  }
}

// Probabilities strictly inside (0, 1), so that a perturbation stays a probability.
Tensor inner_probabilities(const Shape& sizes, double phase) {
  return testing::wiggly(sizes, kFloat64,
                         testing::Wiggle{.phase = phase, .amplitude = 0.4, .offset = 0.5});
}

TEST(LossGradcheck, BinaryCrossEntropyWithLogits) {
  const Tensor logits = testing::wiggly({3, 4}, kFloat64, testing::Wiggle{.amplitude = 4});
  const Tensor target = inner_probabilities({3, 4}, 0.7);
  const Tensor weight = inner_probabilities({4}, 1.1);
  const Tensor pos_weight = add(inner_probabilities({4}, 2.3), 1.0);
  expect_gradcheck("plain", logits, target, [](const Tensor& x, const Tensor& y, Reduction r) {
    return binary_cross_entropy_with_logits(x, y, {}, {}, r);
  });
  expect_gradcheck("weighted", logits, target, [&](const Tensor& x, const Tensor& y, Reduction r) {
    return binary_cross_entropy_with_logits(x, y, weight, pos_weight, r);
  });
  // The weights' own gradients (PyTorch's composite form differentiates them too).
  const Tensor w = weight.detach().requires_grad_(true);
  const Tensor pw = pos_weight.detach().requires_grad_(true);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return binary_cross_entropy_with_logits(logits, target, in[0], in[1], Reduction::Sum);
      },
      {w, pw}));
}

TEST(LossGradcheck, BinaryCrossEntropy) {
  const Tensor probabilities = inner_probabilities({3, 4}, 0.2);
  const Tensor target = inner_probabilities({3, 4}, 1.9);
  const Tensor weight = inner_probabilities({3, 1}, 0.4);
  expect_gradcheck("plain", probabilities, target,
                   [](const Tensor& x, const Tensor& y, Reduction r) {
                     return binary_cross_entropy(x, y, {}, r);
                   });
  expect_gradcheck("weighted", probabilities, target,
                   [&](const Tensor& x, const Tensor& y, Reduction r) {
                     return binary_cross_entropy(x, y, weight, r);
                   });
}

TEST(LossGradcheck, BinaryCrossEntropyGradientIsFiniteAtSaturatedProbabilities) {
  // Note [BCE gradient at 0 and 1]: PyTorch's (x - y) / max(x (1 - x), 1e-12), not 0/0.
  const Tensor x = tensor({0.0, 1.0, 0.5}, kFloat64).requires_grad_(true);
  const Tensor y = tensor({0.25, 0.5, 1.0}, kFloat64);
  const Tensor loss = binary_cross_entropy(x, y, {}, Reduction::Sum);
  EXPECT_NEAR(loss.item<double>(), 0.25 * 100 + 0.5 * 100 + std::log(2.0), 1e-12);
  loss.backward();
  const double epsilon = 1e-12f;  // PyTorch's EPSILON is a float
  EXPECT_TRUE(
      all_close(x.grad(), tensor({-0.25 / epsilon, 0.5 / epsilon, -2.0}, kFloat64), 0, 1e-15));
}

TEST(LossGradcheck, SmoothL1AndHuberAgainstBothArguments) {
  // Distances |x - y| away from beta and delta, where the loss has no second derivative.
  const Tensor x = testing::wiggly({3, 4}, kFloat64, testing::Wiggle{.amplitude = 2});
  const Tensor y = testing::wiggly({3, 4}, kFloat64, testing::Wiggle{.phase = 2.1});
  for (double beta : {0.0, 0.5, 1.0})
    expect_gradcheck("smooth_l1 beta " + std::to_string(beta), x, y,
                     [beta](const Tensor& a, const Tensor& b, Reduction r) {
                       return smooth_l1_loss(a, b, r, beta);
                     });
  expect_gradcheck("l1", x, y,
                   [](const Tensor& a, const Tensor& b, Reduction r) { return l1_loss(a, b, r); });
  for (double delta : {0.7, 1.0})
    expect_gradcheck("huber delta " + std::to_string(delta), x, y,
                     [delta](const Tensor& a, const Tensor& b, Reduction r) {
                       return huber_loss(a, b, r, delta);
                     });
  // A broadcast target gets the sum over the broadcast rows.
  expect_gradcheck(
      "smooth_l1 broadcast", x, testing::wiggly({4}, 0.3, kFloat64),
      [](const Tensor& a, const Tensor& b, Reduction r) { return smooth_l1_loss(a, b, r, 0.5); });
}

// l1_loss is abs(input - target) reduced, all ops with a double backward: its second
// derivative is 0 away from ties, and a gradient penalty through it can be differentiated.
TEST(LossGradcheck, L1LossHasADoubleBackward) {
  const Tensor x = testing::wiggly({3, 4}, kFloat64, testing::Wiggle{.amplitude = 2});
  const Tensor y = testing::wiggly({3, 4}, kFloat64, testing::Wiggle{.phase = 2.1});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const GradcheckResult result = gradgradcheck(
        [&](const std::vector<Tensor>& in) { return l1_loss(in[0], in[1], reduction); },
        {x.detach().requires_grad_(), y.detach().requires_grad_()});
    EXPECT_TRUE(result.ok) << static_cast<int>(reduction) << ": " << result.message;
  }
  // The penalty sum(grad^2) of the mean loss over 12 elements is 12 / 144 whatever x is, so
  // its own gradient is 0 (as PyTorch's).
  const Tensor input = x.detach().requires_grad_();
  const Tensor grad = autograd::grad({l1_loss(input, y)}, {input}, {}, std::nullopt, true)[0];
  EXPECT_TRUE(all_close(grad.abs(), full({3, 4}, 1.0 / 12, kFloat64), 0, 1e-15));
  const Tensor penalty = (grad * grad).sum();
  EXPECT_NEAR(penalty.item<double>(), 12.0 / 144.0, 1e-15);
  penalty.backward();
  EXPECT_TRUE(all_close(input.grad(), zeros({3, 4}, kFloat64), 0, 0));
}

TEST(LossGradcheck, KlDivAgainstInputAndTarget) {
  const Tensor log_probs = log_softmax(testing::wiggly({3, 4}, 0.0, kFloat64), 1);
  const Tensor probs = softmax(testing::wiggly({3, 4}, 1.4, kFloat64), 1);
  for (KLDivReduction reduction : {KLDivReduction::None, KLDivReduction::BatchMean,
                                   KLDivReduction::Sum, KLDivReduction::Mean}) {
    for (bool log_target : {false, true}) {
      const Tensor x = log_probs.detach().requires_grad_(true);
      const Tensor y = (log_target ? log(probs) : probs).detach().requires_grad_(true);
      const GradcheckResult result = gradcheck(
          [&](const std::vector<Tensor>& in) {
            return kl_div(in[0], in[1], reduction, log_target);
          },
          {x, y});
      EXPECT_TRUE(result.ok) << static_cast<int>(reduction) << " " << log_target << ": "
                             << result.message;
    }
  }
}

TEST(LossGradcheck, WeightedNllLossAndNormalize) {
  const Tensor log_probs = log_softmax(testing::wiggly({5, 3}, 0.0, kFloat64), 1);
  const Tensor target = tensor(std::vector<int64_t>{0, 2, -100, 1, 2}, {5});
  const Tensor weight = tensor({0.3, 1.0, 2.5}, kFloat64);
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const auto options = F::NLLLossFuncOptions().weight(weight).reduction(reduction);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return F::nll_loss(in[0], target, options); },
        {log_probs.detach().requires_grad_(true)}));
  }
  for (double p : {1.0, 2.0, 3.0})
    for (int64_t dim : {0, 1, -1})
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            return F::normalize(in[0], F::NormalizeFuncOptions().p(p).dim(dim));
          },
          {testing::wiggly({3, 4}, 0.5, kFloat64).requires_grad_(true)}))
          << "p " << p << " dim " << dim;
}

TEST(LossDetails, BceWithLogitsNeitherOverflowsNorRoundsLargeLogits) {
  // PyTorch's values, in float64: 30 + log1p(exp(-30)) is 30.000000000000092.
  const Tensor x = tensor({-200.0, -30.0, 30.0, 200.0}, kFloat64);
  const Tensor y = tensor({1.0, 1.0, 0.0, 0.0}, kFloat64);
  EXPECT_EQ(to_vector<double>(binary_cross_entropy_with_logits(x, y, {}, {}, Reduction::None)),
            (std::vector<double>{200.0, 30.000000000000092, 30.000000000000092, 200.0}));
  EXPECT_EQ(to_vector<float>(binary_cross_entropy_with_logits(x.to(kFloat32), y.to(kFloat32), {},
                                                              {}, Reduction::None)),
            (std::vector<float>{200.0f, 30.0f, 30.0f, 200.0f}));
}

TEST(LossDetails, KlDivBatchMeanDividesByTheFirstSizeAndZeroTargetsAddNothing) {
  const Tensor input = log(tensor({0.5, 0.5, 0.25, 0.75}, kFloat64).reshape({2, 2}));
  const Tensor target = tensor({0.0, 1.0, 0.5, 0.5}, kFloat64).reshape({2, 2});
  const double total = kl_div(input, target, KLDivReduction::Sum).item<double>();
  EXPECT_NEAR(total,
              1.0 * std::log(1.0 / 0.5) + 0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / 0.75),
              1e-15);
  EXPECT_NEAR(kl_div(input, target, KLDivReduction::BatchMean).item<double>(), total / 2, 1e-15);
  EXPECT_NEAR(kl_div(input, target, KLDivReduction::Mean).item<double>(), total / 4, 1e-15);
}

TEST(LossDetails, WeightedNllMeanDividesByTheCountedWeightsAndIsNanWhenAllIgnored) {
  const Tensor log_probs = log_softmax(testing::wiggly({3, 2}, 0.0, kFloat64), 1);
  const Tensor weight = tensor({2.0, 3.0}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{1, -100, 0}, {3});
  const std::vector<double> lp = to_vector<double>(log_probs);
  const double expected = -(3.0 * lp[1] + 2.0 * lp[4]) / 5.0;
  EXPECT_NEAR(F::nll_loss(log_probs, target, F::NLLLossFuncOptions().weight(weight)).item<double>(),
              expected, 1e-14);
  // Without a weight it is the plain nll_loss.
  EXPECT_TRUE(all_close(F::nll_loss(log_probs, target, F::NLLLossFuncOptions()),
                        nll_loss(log_probs, target), 0, 0));
  const Tensor all_ignored = tensor(std::vector<int64_t>{-100, -100, -100}, {3});
  EXPECT_TRUE(std::isnan(
      F::nll_loss(log_probs, all_ignored, F::NLLLossFuncOptions().weight(weight)).item<double>()));
}

TEST(LossDetails, NormalizeLeavesAZeroVectorZero) {
  const Tensor x = tensor({3.0, 4.0, 0.0, 0.0}, kFloat32).reshape({2, 2});
  EXPECT_TRUE(
      all_close(F::normalize(x), tensor({0.6, 0.8, 0.0, 0.0}, kFloat32).reshape({2, 2}), 1e-7, 0));
  EXPECT_TRUE(all_close(F::normalize(x, F::NormalizeFuncOptions().p(1).dim(0)),
                        tensor({1.0, 1.0, 0.0, 0.0}, kFloat32).reshape({2, 2}), 1e-7, 0));
}

TEST(LossErrors, NormalizeNamesItselfForABadDim) {
  EXPECT_ERROR_CONTAINS(F::normalize(testing::wiggly({2, 3}), F::NormalizeFuncOptions().dim(2)),
                        "normalize: dimension out of range");
  EXPECT_ERROR_CONTAINS(F::normalize(Tensor()), "normalize");
}

TEST(LossErrors, NameTheOpWhatWasExpectedAndWhatWasFound) {
  const Tensor x = testing::wiggly({2, 3});
  const Tensor y = inner_probabilities({2, 3}, 0.1).to(kFloat32);
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x, y.reshape({3, 2})),
                        "binary_cross_entropy_with_logits: expected target of the input's shape");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x, y.to(kFloat64)),
                        "binary_cross_entropy_with_logits: expected target of the input's dtype");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x.to(kInt64), y.to(kInt64)),
                        "binary_cross_entropy_with_logits: expected a floating-point input");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x, y, testing::wiggly({2})),
                        "binary_cross_entropy_with_logits: shapes");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x, y, testing::wiggly({2, 2, 3})),
                        "expected weight that broadcasts to the input's shape [2, 3]");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x, y, {}, testing::wiggly({2})),
                        "binary_cross_entropy_with_logits: shapes");
  EXPECT_ERROR_CONTAINS(
      binary_cross_entropy_with_logits(x, y, {}, testing::wiggly({3}, 0, kFloat64)),
      "expected pos_weight of the input's dtype");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(x, y, {}, {}, static_cast<Reduction>(7)),
                        "binary_cross_entropy_with_logits: expected reduction None, Mean or Sum");
  // binary_cross_entropy: PyTorch's range errors, for the input and for the target.
  EXPECT_ERROR_CONTAINS(binary_cross_entropy(mul(y, 2.0), y),
                        "binary_cross_entropy: all elements of input should be between 0 and 1");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy(y, add(y, 0.5)),
                        "binary_cross_entropy: all elements of target should be between 0 and 1");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy(y, y.reshape({6})),
                        "binary_cross_entropy: expected target of the input's shape [2, 3]");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy(y, y, testing::wiggly({4})),
                        "binary_cross_entropy: shapes");
  EXPECT_ERROR_CONTAINS(smooth_l1_loss(x, testing::wiggly({4})), "smooth_l1_loss: shapes");
  EXPECT_ERROR_CONTAINS(smooth_l1_loss(x, y, Reduction::Mean, -1.0),
                        "smooth_l1_loss: expected beta >= 0, got -1");
  EXPECT_ERROR_CONTAINS(smooth_l1_loss(x, y.to(kFloat64)),
                        "smooth_l1_loss: expected target of the input's dtype");
  EXPECT_ERROR_CONTAINS(l1_loss(x, testing::wiggly({4})), "l1_loss: shapes");
  EXPECT_ERROR_CONTAINS(l1_loss(x, y.to(kFloat64)),
                        "l1_loss: expected target of the input's dtype float32, got target of "
                        "dtype float64");
  EXPECT_ERROR_CONTAINS(l1_loss(x.to(kInt64), y.to(kInt64)),
                        "l1_loss: expected a floating-point input");
  EXPECT_ERROR_CONTAINS(l1_loss(x, y, static_cast<Reduction>(5)), "l1_loss: expected reduction");
  EXPECT_ERROR_CONTAINS(l1_loss(Tensor(), y), "l1_loss: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(huber_loss(x, y, Reduction::Mean, 0.0),
                        "huber_loss: expected delta > 0, got 0");
  EXPECT_ERROR_CONTAINS(huber_loss(x, testing::wiggly({3, 3})), "huber_loss: shapes");
  EXPECT_ERROR_CONTAINS(huber_loss(x, y, static_cast<Reduction>(-1)),
                        "huber_loss: expected reduction");
  EXPECT_ERROR_CONTAINS(kl_div(x, testing::wiggly({5})), "kl_div: shapes");
  EXPECT_ERROR_CONTAINS(kl_div(x, y, static_cast<KLDivReduction>(9)),
                        "kl_div: expected reduction None, BatchMean, Sum or Mean");
  EXPECT_ERROR_CONTAINS(kl_div(x.to(kInt32), y.to(kInt32)), "kl_div: expected a floating-point");
  EXPECT_ERROR_CONTAINS(binary_cross_entropy_with_logits(Tensor(), y),
                        "binary_cross_entropy_with_logits");
  // nll_loss's weight: one value per class.
  const Tensor target = tensor(std::vector<int64_t>{0, 2}, {2});
  EXPECT_ERROR_CONTAINS(
      F::nll_loss(x, target, F::NLLLossFuncOptions().weight(testing::wiggly({2}))),
      "nll_loss: expected a weight of one value per class, shape [3], got "
      "weight of shape [2]");
  EXPECT_ERROR_CONTAINS(F::nll_loss(x, tensor(std::vector<int64_t>{0, 3}, {2}),
                                    F::NLLLossFuncOptions().weight(testing::wiggly({3}))),
                        "nll_loss");
}

TEST(LossAutocast, LossesRunInFloat32AsPyTorchsAutocastLists) {
  using amp::AutocastOp;
  for (AutocastOp op :
       {AutocastOp::BinaryCrossEntropyWithLogits, AutocastOp::BinaryCrossEntropy,
        AutocastOp::SmoothL1Loss, AutocastOp::L1Loss, AutocastOp::HuberLoss, AutocastOp::KlDiv})
    EXPECT_EQ(amp::cast_policy(op), amp::CastPolicy::Float32) << amp::autocast_op_name(op);
  const Tensor logits = testing::wiggly({4, 3}, 0.0, kBFloat16);
  const Tensor target = inner_probabilities({4, 3}, 0.3).to(kBFloat16);
  amp::AutocastGuard autocast(kBFloat16);
  for (Reduction reduction : {Reduction::None, Reduction::Mean}) {
    EXPECT_EQ(binary_cross_entropy_with_logits(logits, target, {}, {}, reduction).dtype(),
              kFloat32);
    // On the CPU binary_cross_entropy runs in float32 too (CUDA refuses it, as PyTorch).
    EXPECT_EQ(binary_cross_entropy(sigmoid(logits), target, {}, reduction).dtype(), kFloat32);
    EXPECT_EQ(smooth_l1_loss(logits, target, reduction).dtype(), kFloat32);
    EXPECT_EQ(huber_loss(logits, target, reduction).dtype(), kFloat32);
    EXPECT_EQ(l1_loss(logits, target, reduction).dtype(), kFloat32);
    EXPECT_EQ(F::nll_loss(log_softmax(logits, 1), tensor(std::vector<int64_t>{0, 1, 2, 0}, {4}),
                          F::NLLLossFuncOptions().weight(tensor({1.0, 2.0, 3.0})))
                  .dtype(),
              kFloat32);
  }
  EXPECT_EQ(kl_div(logits, target, KLDivReduction::BatchMean).dtype(), kFloat32);
  // The float32 result equals the float32 loss of the rounded inputs.
  const Tensor under_autocast = binary_cross_entropy_with_logits(logits, target);
  amp::AutocastGuard off(kBFloat16, /*enabled=*/false);
  EXPECT_TRUE(all_close(under_autocast,
                        binary_cross_entropy_with_logits(logits.to(kFloat32), target.to(kFloat32)),
                        0, 0));
}

std::string printed(const nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

TEST(LossModules, ForwardIsTheFunctionalFormAndWeightsAreBuffers) {
  const Tensor logits = testing::wiggly({4, 3});
  const Tensor target = inner_probabilities({4, 3}, 0.6).to(kFloat32);
  const Tensor weight = tensor({0.5, 1.0, 2.0});
  const Tensor pos_weight = tensor({3.0, 1.0, 0.5});
  nn::BCEWithLogitsLoss bce_with_logits(nn::BCEWithLogitsLossOptions()
                                            .weight(weight.clone())
                                            .pos_weight(pos_weight)
                                            .reduction(Reduction::Sum));
  EXPECT_EQ(bce_with_logits->named_buffers().keys(),
            (std::vector<std::string>{"weight", "pos_weight"}));
  EXPECT_TRUE(bce_with_logits->parameters().empty());
  EXPECT_TRUE(all_close(
      bce_with_logits(logits, target),
      binary_cross_entropy_with_logits(logits, target, weight, pos_weight, Reduction::Sum), 0, 0));
  // Converting the module converts its weights, which the options alias.
  bce_with_logits->to(kFloat64);
  EXPECT_EQ(bce_with_logits->options.weight().dtype(), kFloat64);
  EXPECT_EQ(bce_with_logits(logits.to(kFloat64), target.to(kFloat64)).dtype(), kFloat64);

  nn::BCELoss bce(nn::BCELossOptions().weight(weight));
  EXPECT_EQ(bce->named_buffers().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_TRUE(all_close(bce(sigmoid(logits), target),
                        binary_cross_entropy(sigmoid(logits), target, weight), 0, 0));
  nn::BCELoss unweighted;
  EXPECT_TRUE(unweighted->named_buffers().keys().empty());

  nn::SmoothL1Loss smooth_l1(nn::SmoothL1LossOptions().beta(0.25));
  EXPECT_TRUE(all_close(smooth_l1(logits, target),
                        smooth_l1_loss(logits, target, Reduction::Mean, 0.25), 0, 0));
  nn::L1Loss l1;
  EXPECT_TRUE(all_close(l1(logits, target), l1_loss(logits, target), 0, 0));
  nn::L1Loss l1_sum(nn::L1LossOptions().reduction(Reduction::Sum));
  EXPECT_TRUE(all_close(l1_sum(logits, target), l1_loss(logits, target, Reduction::Sum), 0, 0));
  EXPECT_TRUE(l1->parameters().empty());
  nn::HuberLoss huber(nn::HuberLossOptions().delta(0.3).reduction(Reduction::None));
  EXPECT_TRUE(
      all_close(huber(logits, target), huber_loss(logits, target, Reduction::None, 0.3), 0, 0));
  nn::KLDivLoss kl(nn::KLDivLossOptions().reduction(KLDivReduction::BatchMean).log_target(true));
  EXPECT_TRUE(all_close(
      kl(log_softmax(logits, 1), log_softmax(target, 1)),
      kl_div(log_softmax(logits, 1), log_softmax(target, 1), KLDivReduction::BatchMean, true), 0,
      0));
  nn::NLLLoss nll(nn::NLLLossOptions().weight(weight).ignore_index(1));
  EXPECT_EQ(nll->named_buffers().keys(), (std::vector<std::string>{"weight"}));
  const Tensor classes = tensor(std::vector<int64_t>{0, 1, 2, 2}, {4});
  EXPECT_TRUE(all_close(nll(log_softmax(logits, 1), classes),
                        F::nll_loss(log_softmax(logits, 1), classes,
                                    F::NLLLossFuncOptions().weight(weight).ignore_index(1)),
                        0, 0));
  // The defaults are PyTorch's.
  EXPECT_EQ(nn::L1LossOptions().reduction(), Reduction::Mean);
  EXPECT_EQ(nn::SmoothL1LossOptions().beta(), 1.0);
  EXPECT_EQ(nn::HuberLossOptions().delta(), 1.0);
  EXPECT_EQ(nn::KLDivLossOptions().reduction(), KLDivReduction::Mean);
  EXPECT_FALSE(nn::KLDivLossOptions().log_target());
  EXPECT_EQ(nn::NLLLossOptions().ignore_index(), -100);
  EXPECT_EQ(nn::NLLLossOptions().reduction(), Reduction::Mean);
  EXPECT_EQ(nn::NormalizeFuncOptions().p(), 2.0);
  EXPECT_EQ(nn::NormalizeFuncOptions().dim(), 1);
  EXPECT_EQ(nn::NormalizeFuncOptions().eps(), 1e-12);
}

TEST(LossModules, PrintAsPyTorchAndCheckTheirOptions) {
  EXPECT_EQ(printed(*nn::BCEWithLogitsLoss()), "BCEWithLogitsLoss()");
  EXPECT_EQ(printed(*nn::BCELoss()), "BCELoss()");
  EXPECT_EQ(printed(*nn::SmoothL1Loss()), "SmoothL1Loss()");
  EXPECT_EQ(printed(*nn::L1Loss()), "L1Loss()");
  EXPECT_EQ(printed(*nn::HuberLoss()), "HuberLoss()");
  EXPECT_EQ(printed(*nn::KLDivLoss()), "KLDivLoss()");
  EXPECT_EQ(printed(*nn::NLLLoss()), "NLLLoss()");
  EXPECT_ERROR_CONTAINS(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(-0.5)),
                        "SmoothL1Loss: expected beta >= 0, got -0.5");
  EXPECT_ERROR_CONTAINS(nn::HuberLoss(nn::HuberLossOptions().delta(-1)),
                        "HuberLoss: expected delta > 0, got -1");
  EXPECT_ERROR_CONTAINS(nn::NLLLoss(nn::NLLLossOptions().weight(testing::wiggly({2, 2}))),
                        "NLLLoss: expected a weight of one value per class, 1-D, got weight of "
                        "shape [2, 2]");
}

TEST(SoftmaxModules, ForwardAlongTheirDimAndPrintIt) {
  const Tensor x = testing::wiggly({2, 3, 4});
  nn::Softmax softmax_module(1);
  nn::LogSoftmax log_softmax_module(nn::LogSoftmaxOptions(-1));
  EXPECT_TRUE(all_close(softmax_module(x), softmax(x, 1), 0, 0));
  EXPECT_TRUE(all_close(log_softmax_module(x), log_softmax(x, -1), 0, 0));
  EXPECT_EQ(printed(*softmax_module), "Softmax(dim=1)");
  EXPECT_EQ(printed(*log_softmax_module), "LogSoftmax(dim=-1)");
  EXPECT_TRUE(softmax_module->parameters().empty());
  EXPECT_ERROR_CONTAINS(softmax_module(testing::wiggly({3})), "softmax");
}

TEST(FunctionalModule, WrapsAFunctionWithBoundArgumentsAndSitsInASequential) {
  nn::Functional relu(F::relu);
  const Tensor x = testing::wiggly({2, 5});
  EXPECT_TRUE(all_close(relu(x), F::relu(x), 0, 0));
  nn::Functional leaky(F::leaky_relu, nn::LeakyReLUFuncOptions().negative_slope(0.25));
  EXPECT_TRUE(all_close(leaky(x), leaky_relu(x, 0.25), 0, 0));
  nn::Functional halve([](const Tensor& t) { return div(t, 2.0); });
  EXPECT_TRUE(all_close(halve(x), mul(x, 0.5), 0, 0));
  EXPECT_EQ(printed(*halve), "Functional()");
  EXPECT_TRUE(halve->parameters().empty());
  nn::Sequential net{nn::Linear(5, 3), nn::Functional(F::tanh), nn::Softmax(1)};
  const Tensor y = net->forward(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_TRUE(all_close(sum(y, Shape{1}), tensor({1.0, 1.0}), 1e-6, 0));
  // Gradients flow through the wrapped function.
  const Tensor leaf = x.detach().requires_grad_(true);
  sum(halve(leaf)).backward();
  EXPECT_TRUE(all_close(leaf.grad(), full({2, 5}, 0.5), 0, 0));
  EXPECT_ERROR_CONTAINS(nn::Functional(nn::FunctionalImpl::Function()),
                        "Functional: expected a function");
}

// The mean and variance of N(mean, std^2) truncated to [a, b].
struct TruncatedMoments {
  double mean, variance;
};
TruncatedMoments truncated_normal_moments(double mean, double std, double a, double b) {
  auto pdf = [](double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * std::acos(-1.0)); };
  auto cdf = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double alpha = (a - mean) / std, beta = (b - mean) / std;
  const double z = cdf(beta) - cdf(alpha);
  const double shift = (pdf(alpha) - pdf(beta)) / z;
  return {mean + std * shift,
          std * std * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - shift * shift)};
}

TEST(TruncNormalInit, ValuesStayInsideTheBoundsWithTheTruncatedMoments) {
  struct Case {
    double mean, std, a, b;
  };
  for (const Case& c :
       {Case{0, 1, -2, 2}, Case{1, 2, -1, 6}, Case{0, 0.02, -0.04, 0.04}, Case{-3, 1, -10, -2.5}}) {
    manual_seed(7);
    Tensor t = empty({200, 500}, TensorOptions(kFloat64));
    const Tensor returned = nn::init::trunc_normal_(t, c.mean, c.std, c.a, c.b);
    EXPECT_EQ(returned.data_ptr(), t.data_ptr());
    EXPECT_GE(min(t).item<double>(), c.a);
    EXPECT_LE(max(t).item<double>(), c.b);
    // 100000 draws: the sample mean's standard error is at most std / 316; 8 of them, with a
    // fixed seed, is a bound that a correct sampler meets and a wrong mapping cannot.
    const TruncatedMoments expected = truncated_normal_moments(c.mean, c.std, c.a, c.b);
    const double standard_error = std::sqrt(expected.variance / 1e5);
    EXPECT_NEAR(mean(t).item<double>(), expected.mean, 8 * standard_error) << c.mean;
    EXPECT_NEAR(var(t).item<double>(), expected.variance, 0.02 * expected.variance) << c.mean;
  }
}

TEST(TruncNormalInit, ASeedRepeatsTheValuesInEveryDtype) {
  manual_seed(3);
  Tensor first = empty({64}, TensorOptions(kFloat64));
  nn::init::trunc_normal_(first, 0.5, 1.5, -1.0, 2.0);
  manual_seed(3);
  Tensor again = empty({64}, TensorOptions(kFloat64));
  nn::init::trunc_normal_(again, 0.5, 1.5, -1.0, 2.0);
  EXPECT_TRUE(testing::bitwise_equal(first, again));
  manual_seed(3);
  Tensor single = empty({64});
  nn::init::trunc_normal_(single, 0.5, 1.5, -1.0, 2.0);
  EXPECT_TRUE(testing::bitwise_equal(single, first.to(kFloat32)));
  // A parameter that requires grad is filled in place (under no_grad), as PyTorch's.
  Tensor weight = empty({3, 4}).requires_grad_(true);
  nn::init::trunc_normal_(weight, 0, 0.02, -0.04, 0.04);
  EXPECT_TRUE(weight.requires_grad());
  EXPECT_LE(max(abs(weight.detach())).item<float>(), 0.04f);
  Tensor nothing = empty({0, 3});
  nn::init::trunc_normal_(nothing);
  EXPECT_ERROR_CONTAINS(nn::init::trunc_normal_(empty({2}), 0, 0), "expected std > 0, got 0");
  EXPECT_ERROR_CONTAINS(nn::init::trunc_normal_(empty({2}), 0, 1, 2, 2),
                        "trunc_normal_: expected a < b, got a = 2 and b = 2");
  EXPECT_ERROR_CONTAINS(nn::init::trunc_normal_(empty({2}, kInt64)), "floating-point");
  EXPECT_ERROR_CONTAINS(nn::init::trunc_normal_(Tensor()), "trunc_normal_");
}

}  // namespace
}  // namespace minidl
