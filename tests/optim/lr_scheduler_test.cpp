// Learning-rate schedulers: the lr of every epoch against values worked out by hand from each
// closed form, the lr written into the optimizer, state_dict round trips and their errors.
#include "minidl/optim/lr_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

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
