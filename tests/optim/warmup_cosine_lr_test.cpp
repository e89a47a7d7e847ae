// optim::WarmupCosineLR against nanoGPT's get_lr: values Python printed (repr) from the
// get_lr of the GPT recipe, checked bit for bit; the formula at every step of a run in two
// param groups; state_dict round trips; rejected settings.
#include "minidl/optim/warmup_cosine_lr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "minidl/optim/adam.h"
#include "test_util.h"

namespace minidl::optim {
namespace {

constexpr double kLr = 1e-3;
constexpr int64_t kWarmup = 100;
constexpr int64_t kDecay = 2000;
constexpr double kMinLr = kLr / 10;  // as the recipe sets it

// nanoGPT's get_lr (train.py), transcribed line for line.
double nanogpt_get_lr(int64_t it, double learning_rate, int64_t warmup_iters,
                      int64_t lr_decay_iters, double min_lr) {
  if (it < warmup_iters)
    return learning_rate * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  if (it > lr_decay_iters) return min_lr;
  const double decay_ratio =
      static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * decay_ratio));
  return min_lr + coeff * (learning_rate - min_lr);
}

// AdamW with nanoGPT's two groups: decayed weights and undecayed biases.
struct Fixture {
  Tensor weight = zeros({2, 2}).requires_grad_(true);
  Tensor bias = zeros({2}).requires_grad_(true);
  AdamW optimizer;
  explicit Fixture(double lr = kLr)
      : optimizer({OptimizerParamGroup({weight}, AdamWOptions(lr).weight_decay(0.1)),
                   OptimizerParamGroup({bias}, AdamWOptions(lr).weight_decay(0))},
                  AdamWOptions(lr)) {}
  double lr(size_t group) const { return optimizer.param_groups()[group].options().get_lr(); }
};

TEST(WarmupCosineLR, GivesPythonsGetLrValuesBitForBit) {
  // get_lr(it) of the recipe (lr 1e-3, warm-up 100, decay to 1e-4 at 2000), printed by Python.
  const std::vector<std::pair<int64_t, double>> expected = {
      {0, 9.900990099009901e-06},
      {1, 1.9801980198019803e-05},
      {50, 0.000504950495049505},
      {99, 0.0009900990099009901},
      {100, 0.001},
      {101, 0.0009999993848585915},
      {777, 0.0007463004706110102},
      {1000, 0.0005871607054625496},
      {1999, 0.00010000061514140841},
      {2000, 0.0001},
      {2001, 0.0001},
      {5000, 0.0001},
  };
  Fixture fixture;
  WarmupCosineLR scheduler(fixture.optimizer, kWarmup, kDecay, kMinLr);
  for (const auto& [step, lr] : expected) {
    SCOPED_TRACE("step " + std::to_string(step));
    EXPECT_EQ(scheduler.lr_at(step, 0), lr);
  }
}

TEST(WarmupCosineLR, EveryStepOfARunIsNanoGptsLrInEveryGroup) {
  Fixture fixture;
  fixture.optimizer.param_groups()[1].options().set_lr(3e-3);  // another base lr for group 1
  WarmupCosineLR scheduler(fixture.optimizer, kWarmup, kDecay, kMinLr);
  for (int64_t step = 0; step <= kDecay + 10; ++step) {
    if (step > 0) scheduler.step();
    SCOPED_TRACE("step " + std::to_string(step));
    ASSERT_EQ(scheduler.last_epoch(), step);
    EXPECT_EQ(fixture.lr(0), nanogpt_get_lr(step, kLr, kWarmup, kDecay, kMinLr));
    EXPECT_EQ(fixture.lr(1), nanogpt_get_lr(step, 3e-3, kWarmup, kDecay, kMinLr));
  }
  // The shape: rising through the warm-up, the base lr at its end, min_lr at the decay's end.
  EXPECT_LT(scheduler.lr_at(0, 0), scheduler.lr_at(kWarmup - 1, 0));
  EXPECT_EQ(scheduler.lr_at(kWarmup, 0), kLr);
  EXPECT_EQ(scheduler.lr_at(kDecay, 0), kMinLr);
}

TEST(WarmupCosineLR, WithoutWarmupStartsAtTheBaseLr) {
  Fixture fixture;
  WarmupCosineLR scheduler(fixture.optimizer, 0, 10, 0.0);
  EXPECT_EQ(fixture.lr(0), kLr);
  EXPECT_EQ(scheduler.lr_at(5, 0), nanogpt_get_lr(5, kLr, 0, 10, 0.0));
  EXPECT_EQ(scheduler.lr_at(10, 0), 0.0);
}

TEST(WarmupCosineLR, StateDictRoundTripsAndResumes) {
  Fixture original_fixture;
  WarmupCosineLR original(original_fixture.optimizer, kWarmup, kDecay, kMinLr);
  for (int i = 0; i < 150; ++i) original.step();
  const ScalarMap state = original.state_dict();
  EXPECT_EQ(state.at("last_epoch"), 150);
  EXPECT_EQ(state.at("warmup_steps"), kWarmup);
  EXPECT_EQ(state.at("decay_steps"), kDecay);
  EXPECT_EQ(state.at("min_lr"), kMinLr);

  // A scheduler made with other settings takes the saved ones, through JSON.
  Fixture resumed_fixture;
  WarmupCosineLR resumed(resumed_fixture.optimizer, 5, 50, 0.0);
  EXPECT_NE(resumed.schedule(), original.schedule());
  resumed.load_state_dict(scalar_map_from_json(to_json(state), "scheduler"));
  EXPECT_EQ(resumed.state_dict(), state);
  EXPECT_EQ(resumed.schedule(), original.schedule());
  for (int i = 0; i < 20; ++i) {
    original.step();
    resumed.step();
    EXPECT_EQ(resumed.get_last_lr(), original.get_last_lr());
  }
}

TEST(WarmupCosineLR, RejectsBadSettingsNamingThem) {
  Fixture fixture;
  EXPECT_ERROR_CONTAINS(WarmupCosineLR(fixture.optimizer, -1, 10, 0.0),
                        "WarmupCosineLR: expected warmup_steps >= 0, got -1");
  EXPECT_ERROR_CONTAINS(WarmupCosineLR(fixture.optimizer, 10, 10, 0.0),
                        "expected decay_steps > warmup_steps (the cosine runs between them), got "
                        "decay_steps 10 and warmup_steps 10");
  EXPECT_ERROR_CONTAINS(WarmupCosineLR(fixture.optimizer, 1, 10, -1e-4),
                        "WarmupCosineLR: expected a finite min_lr >= 0, got -0.0001");
  EXPECT_ERROR_CONTAINS(WarmupCosineLR(fixture.optimizer, 1, 10, std::nan("")),
                        "expected a finite min_lr >= 0, got nan");

  WarmupCosineLR scheduler(fixture.optimizer, kWarmup, kDecay, kMinLr);
  const ScalarMap before = scheduler.state_dict();
  ScalarMap bad = before;
  bad["decay_steps"] = 50;
  EXPECT_ERROR_CONTAINS(scheduler.load_state_dict(bad),
                        "WarmupCosineLR load_state_dict: expected decay_steps > warmup_steps");
  EXPECT_EQ(scheduler.state_dict(), before);
}

}  // namespace
}  // namespace minidl::optim
