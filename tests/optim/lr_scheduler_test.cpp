// Learning-rate schedulers: the lr of every epoch against values worked out by hand from each
// closed form, the lr written into the optimizer, state_dict round trips and their errors. The
// comparison with PyTorch's own numbers is lr_scheduler_pytorch_reference_test.cpp.
#include "minidl/optim/lr_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "minidl/optim/reduce_lr_on_plateau.h"
#include "minidl/optim/scheduler_composition.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl::optim {
namespace {

// Parameter groups: one at `lr`, or two at lr and lr / 10.
std::vector<OptimizerParamGroup> groups_for(const Tensor& weight, const Tensor& bias, double lr,
                                            bool two_groups) {
  if (!two_groups) return {OptimizerParamGroup({weight, bias})};
  return {OptimizerParamGroup({weight}),
          OptimizerParamGroup({bias}, SGDOptions(lr / 10).momentum(0.9))};
}

// An SGD optimizer with momentum 0.9, to schedule.
struct Fixture {
  Tensor weight = zeros({2}).requires_grad_(true);
  Tensor bias = zeros({1}).requires_grad_(true);
  SGD optimizer;
  explicit Fixture(double lr, bool two_groups = false)
      : optimizer(groups_for(weight, bias, lr, two_groups), SGDOptions(lr).momentum(0.9)) {}
  double lr(size_t group = 0) const { return optimizer.param_groups()[group].options().get_lr(); }
  double momentum(size_t group = 0) const {
    return dynamic_cast<const SGDOptions&>(optimizer.param_groups()[group].options()).momentum();
  }
};

// Checks epochs 0, 1, ... against `expected` (epoch 0 is the constructor's initial step).
void expect_lrs(LRScheduler& scheduler, const Fixture& fixture, const std::vector<double>& expected,
                size_t group = 0) {
  for (size_t epoch = 0; epoch < expected.size(); ++epoch) {
    if (epoch > 0) scheduler.step();
    SCOPED_TRACE("epoch " + std::to_string(epoch));
    EXPECT_EQ(scheduler.last_epoch(), static_cast<int64_t>(epoch));
    EXPECT_NEAR(scheduler.get_last_lr()[group], expected[epoch],
                1e-15 + 1e-12 * std::abs(expected[epoch]));
    EXPECT_EQ(fixture.lr(group), scheduler.get_last_lr()[group]);
  }
}

TEST(StepLR, DecaysByGammaEveryStepSizeEpochs) {
  Fixture fixture(0.1);
  StepLR scheduler(fixture.optimizer, /*step_size=*/2, /*gamma=*/0.5);
  // 0.1 * 0.5^floor(e / 2)
  expect_lrs(scheduler, fixture, {0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125});
}

TEST(StepLR, ScalesEveryGroupFromItsOwnBase) {
  Fixture fixture(0.1, /*two_groups=*/true);
  StepLR scheduler(fixture.optimizer, 1, 0.1);
  scheduler.step();
  scheduler.step();
  // base lrs 0.1 and 0.01, times 0.1^2
  EXPECT_NEAR(fixture.lr(0), 0.001, 1e-15);
  EXPECT_NEAR(fixture.lr(1), 0.0001, 1e-16);
  EXPECT_EQ(scheduler.base_lrs(), (std::vector<double>{0.1, 0.01}));
}

TEST(MultiStepLR, DecaysAtEachMilestoneCountingRepeats) {
  Fixture fixture(1.0);
  // Milestones in any order; 3 listed twice decays twice there.
  MultiStepLR scheduler(fixture.optimizer, {3, 1, 3}, /*gamma=*/0.1);
  // e0: 1; e1, e2: 1 * 0.1; e3, e4: 0.1 * 0.1 * 0.1
  expect_lrs(scheduler, fixture, {1, 0.1, 0.1, 0.001, 0.001});
}

TEST(CosineAnnealingLR, FollowsHalfACosineToEtaMin) {
  Fixture fixture(0.1);
  CosineAnnealingLR scheduler(fixture.optimizer, /*T_max=*/4, /*eta_min=*/0.01);
  // 0.01 + 0.09 * (1 + cos(pi e / 4)) / 2, with cos(pi/4) = sqrt(1/2), cos(pi/2) = 0,
  // cos(3 pi/4) = -sqrt(1/2), cos(pi) = -1, cos(5 pi/4) = -sqrt(1/2) (past T_max it rises again,
  // as PyTorch's closed form does).
  const double half_root = std::sqrt(0.5);
  expect_lrs(scheduler, fixture,
             {0.1, 0.01 + 0.09 * (1 + half_root) / 2, 0.01 + 0.09 * 0.5,
              0.01 + 0.09 * (1 - half_root) / 2, 0.01, 0.01 + 0.09 * (1 - half_root) / 2});
}

TEST(LinearWarmup, RampsTheBaseLrThenHolds) {
  Fixture fixture(0.5);
  LinearWarmup scheduler(fixture.optimizer, /*warmup_steps=*/4, /*start_factor=*/0.2);
  // factor 0.2 + 0.8 * min(e, 4) / 4 = 0.2, 0.4, 0.6, 0.8, 1, 1; times 0.5
  expect_lrs(scheduler, fixture, {0.1, 0.2, 0.3, 0.4, 0.5, 0.5});
  EXPECT_DOUBLE_EQ(scheduler.factor_at(2), 0.6);
}

TEST(LinearWarmup, ScalesAWrappedScheduler) {
  Fixture fixture(1.0);
  LinearWarmup scheduler(std::make_unique<StepLR>(fixture.optimizer, 2, 0.5),
                         /*warmup_steps=*/2, /*start_factor=*/0.5);
  // StepLR: 1, 1, 0.5, 0.5, 0.25; warmup factor: 0.5, 0.75, 1, 1, 1
  expect_lrs(scheduler, fixture, {0.5, 0.75, 0.5, 0.5, 0.25});
  ASSERT_NE(scheduler.wrapped(), nullptr);
}

TEST(LinearWarmup, RejectsAWrappedSchedulerMadeForOtherParamGroups) {
  Fixture fixture(0.1);
  auto cosine = std::make_unique<CosineAnnealingLR>(fixture.optimizer, 5);
  fixture.optimizer.add_param_group(OptimizerParamGroup({zeros({1}).requires_grad_(true)}));
  EXPECT_ERROR_CONTAINS(LinearWarmup(std::move(cosine), 2, 0.5),
                        "LinearWarmup: the wrapped CosineAnnealingLR was made for 1 param groups, "
                        "but the optimizer has 2");
}

TEST(OneCycleLR, TwoPhasesAsPyTorchLinear) {
  Fixture fixture(0.123);  // ignored: OneCycleLR starts from max_lr / div_factor
  OneCycleLR scheduler(fixture.optimizer, OneCycleLROptions(1.0, /*total_steps=*/10));
  // initial = 1 / 25 = 0.04, min = 0.04 / 1e4 = 4e-6. Phases: steps 0 -> 2 (0.3 * 10 - 1) from
  // 0.04 up to 1, then 2 -> 9 from 1 down to 4e-6; step 10 holds 4e-6 (PyTorch extrapolates to
  // 1 + 8 * down = -0.1428...).
  const double down = (4e-6 - 1) / 7;  // change per step in the second phase
  expect_lrs(scheduler, fixture,
             {0.04, 0.04 + 0.96 * 0.5, 1, 1 + down, 1 + 2 * down, 1 + 3 * down, 1 + 4 * down,
              1 + 5 * down, 1 + 6 * down, 4e-6, 4e-6});
  EXPECT_ERROR_CONTAINS(scheduler.step(),
                        "OneCycleLR: tried to step 11 times; the specified number of total steps "
                        "is 10");
  EXPECT_EQ(scheduler.last_epoch(), 10);  // the failed step changed nothing
  EXPECT_EQ(scheduler.base_lrs(), std::vector<double>{0.04});
}

TEST(OneCycleLR, ThreePhasesAsPyTorchLinear) {
  Fixture fixture(0.1);
  OneCycleLR scheduler(fixture.optimizer,
                       OneCycleLROptions(1.0, 10).three_phase(true).final_div_factor(100));
  // initial 0.04, min 0.04 / 100 = 4e-4. Phases end at 2 (0.3 * 10 - 1), 4 (2 * 0.3 * 10 - 2)
  // and 9: 0.04 -> 1 -> 0.04 -> 4e-4.
  const double down = (4e-4 - 0.04) / 5;  // per step in the last phase
  expect_lrs(scheduler, fixture,
             {0.04, 0.52, 1, 0.52, 0.04, 0.04 + down, 0.04 + 2 * down, 0.04 + 3 * down,
              0.04 + 4 * down, 4e-4});
}

// Issue 15, item 3. A loop steps its scheduler after each of its T steps, so the lr after the last
// step is the one at epoch T. Every scheduler's first value (epoch 0) and its values at T - 1 and
// T against PyTorch's closed forms (torch/optim/lr_scheduler.py, _get_closed_form_lr; OneCycleLR's
// _annealing_linear), for a trainer's T = 100 steps, base lr 0.1.
TEST(LRScheduler, FirstAndLastValuesAreThoseOfPyTorchsClosedForms) {
  constexpr int64_t T = 100;
  const auto boundaries = [](LRScheduler& scheduler) {
    std::vector<double> lrs{scheduler.get_last_lr()[0]};
    for (int64_t epoch = 1; epoch <= T; ++epoch) {
      scheduler.step();
      if (epoch >= T - 1) lrs.push_back(scheduler.get_last_lr()[0]);
    }
    return lrs;  // at 0, T - 1 and T
  };
  const auto expect_boundaries = [](const std::vector<double>& actual,
                                    const std::vector<double>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE("boundary " + std::to_string(i));
      EXPECT_NEAR(actual[i], expected[i], 1e-17 + 1e-13 * std::abs(expected[i]));
      EXPECT_GE(actual[i], 0);
    }
  };
  {
    Fixture fixture(0.1);
    StepLR scheduler(fixture.optimizer, 30, 0.5);  // 0.1 * 0.5^floor(e / 30)
    expect_boundaries(boundaries(scheduler), {0.1, 0.1 * 0.125, 0.1 * 0.125});
  }
  {
    Fixture fixture(0.1);
    MultiStepLR scheduler(fixture.optimizer, {50, 75}, 0.1);  // the trainers' step schedule
    expect_boundaries(boundaries(scheduler), {0.1, 0.001, 0.001});
  }
  {
    Fixture fixture(0.1);
    CosineAnnealingLR scheduler(fixture.optimizer, T);  // (1 + cos(pi e / T)) / 2 * 0.1
    expect_boundaries(boundaries(scheduler),
                      {0.1, 0.05 * (1 + std::cos(std::numbers::pi * 99 / 100)), 0.0});
  }
  {
    Fixture fixture(0.1);
    LinearWarmup scheduler(std::make_unique<CosineAnnealingLR>(fixture.optimizer, T), 10, 0.1);
    expect_boundaries(boundaries(scheduler),
                      {0.01, 0.05 * (1 + std::cos(std::numbers::pi * 99 / 100)), 0.0});
  }
  {
    Fixture fixture(0.1);
    // initial 0.1 / 25 = 0.004, min 0.004 / 1e4 = 4e-7; PyTorch's value at T would be
    // 4e-7 + (4e-7 - 0.1) / 69 = -0.00144...: held at min_lr here.
    OneCycleLR scheduler(fixture.optimizer, OneCycleLROptions(0.1, T));
    expect_boundaries(boundaries(scheduler), {0.004, 4e-7, 4e-7});
  }
  {
    Fixture fixture(0.1);
    OneCycleLR scheduler(fixture.optimizer, OneCycleLROptions(0.1, T).three_phase(true));
    expect_boundaries(boundaries(scheduler), {0.004, 4e-7, 4e-7});
  }
}

TEST(OneCycleLR, PerGroupMaxLrAndMomentumCycling) {
  Fixture fixture(0.1, /*two_groups=*/true);
  OneCycleLR scheduler(fixture.optimizer,
                       OneCycleLROptions(std::vector<double>{1.0, 0.5}, 10).cycle_momentum(true));
  // Group 1 runs at half group 0's lrs. Momentum: 0.95 -> 0.85 over steps 0..2, back to 0.95 by 9.
  EXPECT_DOUBLE_EQ(fixture.lr(1), 0.02);
  EXPECT_DOUBLE_EQ(fixture.momentum(0), 0.95);
  scheduler.step();
  EXPECT_DOUBLE_EQ(fixture.lr(1), 0.26);        // 0.02 + 0.48 * 0.5
  EXPECT_DOUBLE_EQ(fixture.momentum(0), 0.90);  // 0.95 - 0.1 * 0.5
  EXPECT_DOUBLE_EQ(fixture.momentum(1), 0.90);
  scheduler.step();
  scheduler.step();
  EXPECT_DOUBLE_EQ(fixture.momentum(0), 0.85 + 0.1 / 7);  // one step into the second phase
}

TEST(OneCycleLR, RejectsInvalidOptions) {
  Fixture fixture(0.1, /*two_groups=*/true);
  EXPECT_ERROR_CONTAINS(OneCycleLR(fixture.optimizer, OneCycleLROptions({1.0, 2.0, 3.0}, 10)),
                        "expected one max_lr, or one per param group (2), got 3");
  EXPECT_ERROR_CONTAINS(OneCycleLR(fixture.optimizer, OneCycleLROptions(1.0, 0)),
                        "expected total_steps > 0, got 0");
  EXPECT_ERROR_CONTAINS(OneCycleLR(fixture.optimizer, OneCycleLROptions(1.0, 10).pct_start(1.5)),
                        "expected pct_start in [0, 1], got 1.5");
  // 0.1 * 10 - 1 = 0: the first phase would be [0, 0], as PyTorch's ZeroDivisionError.
  EXPECT_ERROR_CONTAINS(OneCycleLR(fixture.optimizer, OneCycleLROptions(1.0, 10).pct_start(0.1)),
                        "step 0 falls in phase 1, which starts and ends at step 0");
}

TEST(LRScheduler, StateDictRoundTripsAndResumes) {
  Fixture original_fixture(1.0, /*two_groups=*/true);
  OneCycleLR original(original_fixture.optimizer,
                      OneCycleLROptions({1.0, 0.3}, 20).three_phase(true));
  for (int i = 0; i < 7; ++i) original.step();
  const ScalarMap state = original.state_dict();
  EXPECT_EQ(state.at("last_epoch"), 7);
  EXPECT_EQ(state.at("max_lrs.1"), 0.3);

  // A scheduler made with other settings takes the saved ones, through JSON.
  Fixture resumed_fixture(1.0, /*two_groups=*/true);
  OneCycleLR resumed(resumed_fixture.optimizer, OneCycleLROptions(5.0, 100));
  resumed.load_state_dict(scalar_map_from_json(to_json(state), "scheduler"));
  EXPECT_EQ(resumed.state_dict(), state);
  for (int i = 0; i < 13; ++i) {
    original.step();
    resumed.step();
    EXPECT_EQ(resumed.get_last_lr(), original.get_last_lr());
  }
}

TEST(LRScheduler, WrappedStateRoundTrips) {
  Fixture fixture(0.1);
  LinearWarmup original(std::make_unique<CosineAnnealingLR>(fixture.optimizer, 10), 3, 0.1);
  original.step();
  const ScalarMap state = original.state_dict();
  EXPECT_EQ(state.at("wrapped.T_max"), 10);

  Fixture other(0.1);
  LinearWarmup resumed(std::make_unique<CosineAnnealingLR>(other.optimizer, 50), 5, 0.5);
  resumed.load_state_dict(state);
  EXPECT_EQ(resumed.state_dict(), state);
  original.step();
  resumed.step();
  EXPECT_EQ(resumed.get_last_lr(), original.get_last_lr());
}

TEST(LRScheduler, LoadRejectsOtherSchedulersStateAndChangesNothing) {
  Fixture fixture(0.1);
  StepLR step_lr(fixture.optimizer, 3, 0.5);
  step_lr.step();
  const ScalarMap before = step_lr.state_dict();

  Fixture other(0.1);
  CosineAnnealingLR cosine(other.optimizer, 10);
  EXPECT_ERROR_CONTAINS(step_lr.load_state_dict(cosine.state_dict()),
                        "StepLR load_state_dict: missing 'step_size'");
  ScalarMap extra = before;
  extra["eta_min"] = 0;
  EXPECT_ERROR_CONTAINS(step_lr.load_state_dict(extra),
                        "StepLR load_state_dict: unexpected 'eta_min'");
  ScalarMap bad = before;
  bad["step_size"] = 0;
  EXPECT_ERROR_CONTAINS(step_lr.load_state_dict(bad), "expected step_size > 0, got 0");
  ScalarMap fractional = before;
  fractional["last_epoch"] = 1.5;
  EXPECT_ERROR_CONTAINS(step_lr.load_state_dict(fractional),
                        "expected 'last_epoch' to be a whole number, found 1.5");
  EXPECT_EQ(step_lr.state_dict(), before);
}

TEST(ExponentialLR, RejectsGammaNotPositive) {
  Fixture fixture(0.1);
  EXPECT_ERROR_CONTAINS(ExponentialLR(fixture.optimizer, 0),
                        "ExponentialLR: expected a finite gamma > 0, got 0");
  EXPECT_ERROR_CONTAINS(ExponentialLR(fixture.optimizer, -0.5),
                        "ExponentialLR: expected a finite gamma > 0, got -0.5");
  ExponentialLR scheduler(fixture.optimizer, 0.5);
  ScalarMap state = scheduler.state_dict();
  state["gamma"] = 0;
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(state),
                        "ExponentialLR load_state_dict: expected a finite gamma > 0, got 0");
}

TEST(PolynomialLR, RejectsTotalItersBelowOneAndNegativePower) {
  Fixture fixture(0.1);
  EXPECT_ERROR_CONTAINS(PolynomialLR(fixture.optimizer, 0),
                        "PolynomialLR: expected total_iters >= 1, got 0");
  EXPECT_ERROR_CONTAINS(PolynomialLR(fixture.optimizer, 4, -1),
                        "PolynomialLR: expected a finite power >= 0, got -1");
}

// Schedulers for a composition, made in the order listed.
using SchedulerList = std::vector<std::unique_ptr<LRScheduler>>;

SchedulerList step_then_cosine(SGD& optimizer, int64_t T_max) {
  SchedulerList schedulers;
  schedulers.push_back(std::make_unique<StepLR>(optimizer, 1, 0.5));
  schedulers.push_back(std::make_unique<CosineAnnealingLR>(optimizer, T_max));
  return schedulers;
}

TEST(SequentialLR, RejectsBadMilestonesAndSchedulers) {
  Fixture fixture(0.1);
  EXPECT_ERROR_CONTAINS(SequentialLR(fixture.optimizer, step_then_cosine(fixture.optimizer, 5), {}),
                        "SequentialLR: expected one milestone fewer than schedulers (1 for 2), "
                        "got 0");
  EXPECT_ERROR_CONTAINS(
      SequentialLR(fixture.optimizer, step_then_cosine(fixture.optimizer, 5), {0}),
      "SequentialLR: expected milestones > 0, got 0");
  SchedulerList three = step_then_cosine(fixture.optimizer, 5);
  three.push_back(std::make_unique<ExponentialLR>(fixture.optimizer, 0.9));
  EXPECT_ERROR_CONTAINS(SequentialLR(fixture.optimizer, std::move(three), {4, 4}),
                        "SequentialLR: expected strictly increasing milestones, got 4 after 4");
  EXPECT_ERROR_CONTAINS(SequentialLR(fixture.optimizer, SchedulerList{}, {}),
                        "SequentialLR: expected at least one scheduler, got none");
  SchedulerList with_null;
  with_null.push_back(nullptr);
  EXPECT_ERROR_CONTAINS(SequentialLR(fixture.optimizer, std::move(with_null), {}),
                        "SequentialLR: scheduler 0 is null");

  Fixture other(0.1);
  SchedulerList mixed;
  mixed.push_back(std::make_unique<ExponentialLR>(fixture.optimizer, 0.9));
  mixed.push_back(std::make_unique<StepLR>(other.optimizer, 2));
  EXPECT_ERROR_CONTAINS(SequentialLR(fixture.optimizer, std::move(mixed), {3}),
                        "SequentialLR: scheduler 1 (StepLR) schedules another optimizer; expected "
                        "every scheduler to schedule the SequentialLR's optimizer");
}

TEST(ChainedScheduler, RejectsBadSchedulers) {
  Fixture fixture(0.1);
  EXPECT_ERROR_CONTAINS(ChainedScheduler(SchedulerList{}),
                        "ChainedScheduler: expected at least one scheduler, got none");
  Fixture other(0.1);
  SchedulerList mixed;
  mixed.push_back(std::make_unique<ExponentialLR>(fixture.optimizer, 0.9));
  mixed.push_back(std::make_unique<CosineAnnealingLR>(other.optimizer, 4));
  EXPECT_ERROR_CONTAINS(ChainedScheduler(std::move(mixed)),
                        "ChainedScheduler: scheduler 1 (CosineAnnealingLR) schedules another "
                        "optimizer");
  // PyTorch's LinearLR refuses start_factor 0, whose chained form divides by zero.
  SchedulerList from_zero;
  from_zero.push_back(std::make_unique<LinearWarmup>(fixture.optimizer, 3, 0.0));
  EXPECT_ERROR_CONTAINS(ChainedScheduler(std::move(from_zero)),
                        "LinearWarmup: cannot chain a warmup with start_factor 0");
}

TEST(SequentialLR, StateDictResumesMidRun) {
  Fixture original_fixture(1.0, /*two_groups=*/true);
  SchedulerList phases;
  phases.push_back(std::make_unique<LinearWarmup>(original_fixture.optimizer, 3, 0.1));
  phases.push_back(std::make_unique<CosineAnnealingLR>(original_fixture.optimizer, 10, 0.01));
  SequentialLR original(original_fixture.optimizer, std::move(phases), {3});
  for (int i = 0; i < 5; ++i) original.step();  // past the milestone
  const ScalarMap state = original.state_dict();
  EXPECT_EQ(state.at("milestones.0"), 3);
  EXPECT_EQ(state.at("schedulers.1.T_max"), 10);
  EXPECT_EQ(state.at("schedulers.0.base_lrs.1"), 0.1);  // rebased to the first scheduler's

  // Made with other settings, it takes the saved ones, through JSON.
  Fixture resumed_fixture(1.0, /*two_groups=*/true);
  SchedulerList other_phases;
  other_phases.push_back(std::make_unique<LinearWarmup>(resumed_fixture.optimizer, 8, 0.5));
  other_phases.push_back(std::make_unique<CosineAnnealingLR>(resumed_fixture.optimizer, 50));
  SequentialLR resumed(resumed_fixture.optimizer, std::move(other_phases), {8});
  resumed.load_state_dict(scalar_map_from_json(to_json(state), "scheduler"));
  EXPECT_EQ(resumed.state_dict(), state);
  for (int i = 0; i < 10; ++i) {
    original.step();
    resumed.step();
    EXPECT_EQ(resumed.get_last_lr(), original.get_last_lr());
  }

  // A child's bad state is an error that leaves the whole scheduler as it was.
  const ScalarMap before = resumed.state_dict();
  ScalarMap bad = state;
  bad["schedulers.1.T_max"] = 0;
  EXPECT_ERROR_CONTAINS(resumed.load_state_dict(bad),
                        "CosineAnnealingLR load_state_dict: expected T_max > 0, got 0");
  ScalarMap unordered = state;
  unordered["milestones.0"] = -2;
  EXPECT_ERROR_CONTAINS(resumed.load_state_dict(unordered),
                        "SequentialLR load_state_dict: expected milestones > 0, got -2");
  EXPECT_EQ(resumed.state_dict(), before);
}

TEST(ChainedScheduler, StateDictResumesThePathDependentLr) {
  const auto chain = [](SGD& optimizer, double gamma, int64_t T_max) {
    SchedulerList schedulers;
    schedulers.push_back(std::make_unique<ExponentialLR>(optimizer, gamma));
    schedulers.push_back(std::make_unique<CosineAnnealingLR>(optimizer, T_max, 0.001));
    return std::make_unique<ChainedScheduler>(std::move(schedulers));
  };
  Fixture original_fixture(0.1, /*two_groups=*/true);
  const auto original = chain(original_fixture.optimizer, 0.9, 4);
  for (int i = 0; i < 7; ++i) original->step();
  const ScalarMap state = original->state_dict();
  EXPECT_EQ(state.at("schedulers.0.gamma"), 0.9);

  Fixture resumed_fixture(0.1, /*two_groups=*/true);
  const auto resumed = chain(resumed_fixture.optimizer, 0.5, 9);
  resumed->load_state_dict(scalar_map_from_json(to_json(state), "scheduler"));
  EXPECT_EQ(resumed->state_dict(), state);
  for (int i = 0; i < 10; ++i) {
    original->step();
    resumed->step();
    EXPECT_EQ(resumed->get_last_lr(), original->get_last_lr());
    // lr_at replays the chain from epoch 0 to the same value.
    EXPECT_EQ(original->lr_at(original->last_epoch(), 1), original->get_last_lr()[1]);
  }
}

TEST(SequentialLR, HoldsAChainedSchedulerRestartedAtItsMilestone) {
  Fixture fixture(1.0);
  // Made before the StepLR listed first, the chain's ExponentialLR found the lr 1 that every
  // scheduler starts from (StepLR found the 0.5 the warmup set).
  SchedulerList chained;
  chained.push_back(std::make_unique<ExponentialLR>(fixture.optimizer, 0.9));
  chained.push_back(std::make_unique<LinearWarmup>(fixture.optimizer, 2, 0.5));
  SchedulerList phases;
  phases.push_back(std::make_unique<StepLR>(fixture.optimizer, 1, 0.5));
  phases.push_back(std::make_unique<ChainedScheduler>(std::move(chained)));
  SequentialLR scheduler(fixture.optimizer, std::move(phases), {2});
  // StepLR: 1, 0.5. Then the chain from its epoch 0: 0.9^k * f(k), f = 0.5, 0.75, 1.
  expect_lrs(scheduler, fixture, {1, 0.5, 0.5, 0.9 * 0.75, 0.81, 0.729});
}

TEST(ChainedScheduler, TheLastSchedulerSettingMomentumWins) {
  Fixture fixture(0.1);
  SchedulerList schedulers;
  schedulers.push_back(std::make_unique<OneCycleLR>(
      fixture.optimizer, OneCycleLROptions(1.0, 10).cycle_momentum(true).max_momentum(0.99)));
  schedulers.push_back(std::make_unique<ExponentialLR>(fixture.optimizer, 0.9));
  schedulers.push_back(std::make_unique<OneCycleLR>(
      fixture.optimizer, OneCycleLROptions(1.0, 10).cycle_momentum(true).max_momentum(0.97)));
  schedulers.push_back(std::make_unique<StepLR>(fixture.optimizer, 3));
  ChainedScheduler scheduler(std::move(schedulers));
  EXPECT_EQ(fixture.momentum(), 0.97);  // at epoch 0: max_momentum
  EXPECT_EQ(scheduler.momentum_at(0, 0), 0.97);
}

TEST(LRScheduler, ScheduleLeavesOutWhereHeldSchedulersStand) {
  Fixture fixture(0.1, /*two_groups=*/true);
  SequentialLR scheduler(fixture.optimizer, step_then_cosine(fixture.optimizer, 5), {2});
  const ScalarMap schedule = scheduler.schedule();
  EXPECT_EQ(schedule.at("schedulers.1.T_max"), 5);
  EXPECT_EQ(schedule.at("schedulers.1.base_lrs.1"), 0.01);
  for (const auto& [key, value] : schedule) {
    EXPECT_EQ(key.find("last_epoch"), std::string::npos) << key;
    EXPECT_EQ(key.find("last_lrs"), std::string::npos) << key;
  }
  for (int i = 0; i < 4; ++i) scheduler.step();
  EXPECT_EQ(scheduler.schedule(), schedule);
}

TEST(ReduceLROnPlateau, RejectsBadOptions) {
  Fixture fixture(0.1, /*two_groups=*/true);
  using Options = ReduceLROnPlateauOptions;
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().factor(1)),
                        "ReduceLROnPlateau: expected factor in [0, 1), got 1");
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().patience(-1)),
                        "ReduceLROnPlateau: expected patience >= 0, got -1");
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().cooldown(-2)),
                        "ReduceLROnPlateau: expected cooldown >= 0, got -2");
  EXPECT_ERROR_CONTAINS(
      ReduceLROnPlateau(fixture.optimizer, Options().mode(static_cast<PlateauMode>(7))),
      "ReduceLROnPlateau: expected mode PlateauMode::kMin or PlateauMode::kMax, got 7");
  EXPECT_ERROR_CONTAINS(
      ReduceLROnPlateau(fixture.optimizer, Options().threshold_mode(static_cast<ThresholdMode>(3))),
      "ReduceLROnPlateau: expected threshold_mode ThresholdMode::kRelative or "
      "ThresholdMode::kAbsolute, got 3");
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().threshold(-1e-3)),
                        "ReduceLROnPlateau: expected a finite threshold >= 0, got -0.001");
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().threshold(1)),
                        "ReduceLROnPlateau: expected threshold < 1 for mode kMin with a relative "
                        "threshold, got 1");
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().min_lrs({0.001})),
                        "ReduceLROnPlateau: expected one min_lr per param group (2), got 1");
  EXPECT_ERROR_CONTAINS(ReduceLROnPlateau(fixture.optimizer, Options().min_lr(-1)),
                        "ReduceLROnPlateau: expected finite min_lrs >= 0, got -1");
}

TEST(ReduceLROnPlateau, LeavesTheLrsAloneUntilItReduces) {
  Fixture fixture(0.1);
  ReduceLROnPlateau scheduler(fixture.optimizer, ReduceLROnPlateauOptions().patience(1));
  // Not a scheduler of the closed-form kind: another may set the lr between its steps, and a
  // reduction starts from that lr.
  fixture.optimizer.param_groups()[0].options().set_lr(0.3);
  scheduler.step(1.0);
  scheduler.step(1.0);
  EXPECT_EQ(fixture.lr(), 0.3);
  scheduler.step(1.0);  // the second bad epoch: more than patience
  EXPECT_DOUBLE_EQ(fixture.lr(), 0.03);
  EXPECT_EQ(scheduler.get_last_lr(), std::vector<double>{fixture.lr()});
}

TEST(ReduceLROnPlateau, SkipsAReductionOfExactlyEps) {
  for (const double eps : {0.25, 0.2499}) {
    Fixture fixture(0.5);
    ReduceLROnPlateau scheduler(fixture.optimizer,
                                ReduceLROnPlateauOptions().factor(0.5).patience(0).eps(eps));
    scheduler.step(1.0);
    scheduler.step(2.0);  // bad: 0.5 -> 0.25 lowers it by 0.25, applied only when more than eps
    EXPECT_EQ(fixture.lr(), eps == 0.25 ? 0.5 : 0.25) << "eps " << eps;
  }
}

TEST(ReduceLROnPlateau, NeedsMinLrsForGroupsAddedLater) {
  Fixture fixture(0.1);
  ReduceLROnPlateau per_group(fixture.optimizer, ReduceLROnPlateauOptions().min_lrs({0.01}));
  ReduceLROnPlateau one_for_all(fixture.optimizer,
                                ReduceLROnPlateauOptions().patience(0).min_lr(0.05));
  fixture.optimizer.add_param_group(
      OptimizerParamGroup({zeros({1}).requires_grad_(true)}, SGDOptions(0.2)));
  EXPECT_ERROR_CONTAINS(per_group.step(1.0),
                        "ReduceLROnPlateau: the optimizer has 2 param groups, but min_lrs has 1");
  EXPECT_EQ(per_group.last_epoch(), 0);  // the failed step changed nothing
  one_for_all.step(1.0);
  one_for_all.step(2.0);
  EXPECT_EQ(one_for_all.get_last_lr(), (std::vector<double>{0.05, 0.05}));
}

TEST(ReduceLROnPlateau, StateDictRoundTripsAndResumes) {
  const auto options = ReduceLROnPlateauOptions()
                           .mode(PlateauMode::kMax)
                           .factor(0.5)
                           .patience(1)
                           .cooldown(2)
                           .threshold(0.1)
                           .threshold_mode(ThresholdMode::kAbsolute)
                           .min_lrs({0.02, 0.001});
  const std::vector<double> metrics{1.0, 1.05, 1.02, 1.0, 1.3, 1.31, 1.2, 1.1, 1.5, 1.4, 1.3};
  Fixture original_fixture(0.1, /*two_groups=*/true);
  ReduceLROnPlateau original(original_fixture.optimizer, options);
  // A fresh scheduler's best is -infinity, which JSON cannot hold.
  const ScalarMap fresh = original.state_dict();
  EXPECT_EQ(fresh.at("best_infinity"), -1);
  EXPECT_EQ(fresh.count("best"), 0u);
  EXPECT_EQ(scalar_map_from_json(to_json(fresh), "fresh"), fresh);

  for (size_t i = 0; i < 4; ++i) original.step(metrics[i]);
  ASSERT_TRUE(original.in_cooldown());  // mid-cooldown, after one reduction
  const ScalarMap state = original.state_dict();
  EXPECT_EQ(state.at("best"), 1.0);
  EXPECT_EQ(state.at("cooldown_counter"), 1);
  EXPECT_EQ(state.at("min_lrs.1"), 0.001);

  // The resumed run gets its lrs from the optimizer's state, the rest from the scheduler's.
  Fixture resumed_fixture(0.1, /*two_groups=*/true);
  for (size_t g = 0; g < 2; ++g)
    resumed_fixture.optimizer.param_groups()[g].options().set_lr(original_fixture.lr(g));
  ReduceLROnPlateau resumed(resumed_fixture.optimizer,
                            ReduceLROnPlateauOptions().patience(7).min_lr(0.5));
  resumed.load_state_dict(scalar_map_from_json(to_json(state), "scheduler"));
  EXPECT_EQ(resumed.state_dict(), state);
  EXPECT_EQ(resumed.schedule(), original.schedule());
  for (size_t i = 4; i < metrics.size(); ++i) {
    original.step(metrics[i]);
    resumed.step(metrics[i]);
    EXPECT_EQ(resumed.get_last_lr(), original.get_last_lr());
    EXPECT_EQ(resumed.state_dict(), original.state_dict());
  }
  EXPECT_LT(original.get_last_lr()[0], 0.05);  // the run reduced again after resuming
}

TEST(ReduceLROnPlateau, LoadRejectsBadStateAndChangesNothing) {
  Fixture fixture(0.1);
  ReduceLROnPlateau scheduler(fixture.optimizer);
  scheduler.step(3.0);
  const ScalarMap before = scheduler.state_dict();
  ScalarMap bad_mode = before;
  bad_mode["mode"] = 2;
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(bad_mode),
                        "ReduceLROnPlateau load_state_dict: expected 'mode' 0 (min) or 1 (max), "
                        "got 2");
  ScalarMap bad_factor = before;
  bad_factor["factor"] = 1.5;
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(bad_factor),
                        "ReduceLROnPlateau load_state_dict: expected factor in [0, 1), got 1.5");
  ScalarMap extra = before;
  extra["gamma"] = 0.5;
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(extra),
                        "ReduceLROnPlateau load_state_dict: unexpected 'gamma'");
  ScalarMap missing = before;
  missing.erase("best");
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(missing),
                        "ReduceLROnPlateau load_state_dict: missing 'best_infinity'");
  Fixture step_fixture(0.1);
  StepLR step_lr(step_fixture.optimizer, 2);
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(step_lr.state_dict()),
                        "ReduceLROnPlateau load_state_dict: missing 'num_bad_epochs'");
  EXPECT_EQ(scheduler.state_dict(), before);
}

TEST(CheckpointableScheduler, CoversBothKindsOfScheduler) {
  Fixture fixture(0.1);
  StepLR step_lr(fixture.optimizer, 2);
  ReduceLROnPlateau plateau(fixture.optimizer);
  const std::vector<const CheckpointableScheduler*> schedulers{&step_lr, &plateau};
  EXPECT_STREQ(schedulers[0]->name(), "StepLR");
  EXPECT_STREQ(schedulers[1]->name(), "ReduceLROnPlateau");
  EXPECT_EQ(schedulers[0]->schedule().at("step_size"), 2);
  EXPECT_EQ(schedulers[1]->schedule().at("patience"), 10);
  EXPECT_EQ(schedulers[1]->schedule().count("last_epoch"), 0u);
}

TEST(LRScheduler, NoticesParamGroupsAddedLater) {
  Fixture fixture(0.1);
  StepLR scheduler(fixture.optimizer, 1);
  fixture.optimizer.add_param_group(OptimizerParamGroup({zeros({1}).requires_grad_(true)}));
  EXPECT_ERROR_CONTAINS(scheduler.step(),
                        "StepLR: the optimizer has 2 param groups, but the scheduler was made "
                        "for 1");
}

}  // namespace
}  // namespace minidl::optim
