// amp::GradScaler on the CPU: scaled losses and unscaled gradients by value, the skip on inf
// or NaN (bitwise), growth and backoff of the scale, its floor, the consecutive-skip error, the
// state_dict round trip, and the misuse errors.
#include "minidl/optim/grad_scaler.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/logging.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "minidl/optim/scalar_map.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Two parameters and a loss linear in them: loss = sum(w * a) + sum(v * b), so the gradients
// are exactly a and b (times the scale).
struct LinearProblem {
  Tensor w = tensor({0.5, -1.0, 2.0}).requires_grad_();
  Tensor v = tensor({3.0, -0.25}).requires_grad_();
  Tensor a = tensor({1.0, 2.0, -3.0});
  Tensor b = tensor({0.5, 4.0});

  Tensor loss() const { return sum(w * a) + sum(v * b); }
  std::vector<Tensor> params() const { return {w, v}; }
};

// One training iteration: scaled backward, then the scaler's step and update.
void iterate(amp::GradScaler& scaler, optim::Optimizer& optimizer, const LinearProblem& problem,
             bool poison = false) {
  optimizer.zero_grad();
  scaler.scale(problem.loss()).backward();
  if (poison) problem.v.grad().data_ptr<float>()[1] = std::numeric_limits<float>::infinity();
  scaler.step(optimizer);
  scaler.update();
}

TEST(GradScaler, ScalesTheLossAndUnscalesTheGradientsExactly) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024));
  const Tensor loss = problem.loss();
  const Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.dtype(), kFloat32);
  EXPECT_EQ(scaled.sizes(), loss.sizes());
  EXPECT_FLOAT_EQ(scaled.item<float>(), 1024.0f * loss.item<float>());
  scaled.backward();
  EXPECT_TRUE(all_close(problem.w.grad(), problem.a * 1024.0, 0, 0));
  scaler.unscale_(optimizer);
  // Powers of two: the unscaled gradients are the true ones, bit for bit.
  EXPECT_TRUE(all_close(problem.w.grad(), problem.a, 0, 0));
  EXPECT_TRUE(all_close(problem.v.grad(), problem.b, 0, 0));
  const Tensor w_before = problem.w.detach().clone();
  scaler.step(optimizer);  // does not unscale a second time
  EXPECT_TRUE(all_close(problem.w, w_before - problem.a * 0.1, 1e-7, 1e-6));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024.0);
}

TEST(GradScaler, AnInfGradientSkipsTheStepAndHalvesTheScale) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  const Tensor w_before = problem.w.detach().clone(), v_before = problem.v.detach().clone();
  iterate(scaler, optimizer, problem, /*poison=*/true);
  // Every weight unchanged bit for bit, including the one whose gradient was finite, and no
  // momentum buffer made.
  EXPECT_TRUE(testing::bitwise_equal(problem.w, w_before));
  EXPECT_TRUE(testing::bitwise_equal(problem.v, v_before));
  EXPECT_EQ(optimizer.state(problem.w), nullptr);
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  // A clean iteration then updates as usual, from the true gradient.
  iterate(scaler, optimizer, problem);
  EXPECT_TRUE(all_close(problem.w, w_before - problem.a * 0.1, 1e-7, 1e-6));
  EXPECT_EQ(scaler.get_scale(), 32768.0);
}

TEST(GradScaler, ANaNGradientSkipsTheStepToo) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(8));
  const Tensor w_before = problem.w.detach().clone();
  optimizer.zero_grad();
  scaler.scale(problem.loss()).backward();
  problem.w.grad().data_ptr<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  scaler.step(optimizer);
  scaler.update();
  EXPECT_TRUE(testing::bitwise_equal(problem.w, w_before));
  EXPECT_EQ(scaler.get_scale(), 4.0);
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.0));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(16).growth_interval(3));
  iterate(scaler, optimizer, problem);
  iterate(scaler, optimizer, problem);
  EXPECT_EQ(scaler.get_scale(), 16.0);
  iterate(scaler, optimizer, problem);
  EXPECT_EQ(scaler.get_scale(), 32.0);
  // A skip resets the count of clean steps.
  iterate(scaler, optimizer, problem);
  iterate(scaler, optimizer, problem, /*poison=*/true);
  EXPECT_EQ(scaler.get_scale(), 16.0);
  iterate(scaler, optimizer, problem);
  iterate(scaler, optimizer, problem);
  EXPECT_EQ(scaler.get_scale(), 16.0);
  iterate(scaler, optimizer, problem);
  EXPECT_EQ(scaler.get_scale(), 32.0);
}

TEST(GradScaler, NeverDropsBelowMinScale) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(4).min_scale(1.5));
  iterate(scaler, optimizer, problem, true);
  EXPECT_EQ(scaler.get_scale(), 2.0);
  iterate(scaler, optimizer, problem, true);
  EXPECT_EQ(scaler.get_scale(), 1.5);
  iterate(scaler, optimizer, problem, true);
  EXPECT_EQ(scaler.get_scale(), 1.5);
  EXPECT_EQ(amp::GradScalerOptions().min_scale(), 1.0);  // the documented default
}

TEST(GradScaler, TooManyConsecutiveSkipsIsAnError) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().max_consecutive_skips(3));
  for (int i = 0; i < 3; ++i) iterate(scaler, optimizer, problem, true);
  // A clean step resets the count...
  iterate(scaler, optimizer, problem);
  for (int i = 0; i < 3; ++i) iterate(scaler, optimizer, problem, true);
  // ...and the fourth skip in a row is one too many.
  EXPECT_ERROR_CONTAINS(iterate(scaler, optimizer, problem, true),
                        "4 consecutive steps were skipped");
  EXPECT_ERROR_CONTAINS(scaler.get_scale(), "a run that only produces inf is broken");
}

TEST(GradScaler, StateDictRoundTripsThroughJson) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.0));
  const auto options = amp::GradScalerOptions().init_scale(64).growth_interval(3).min_scale(2);
  amp::GradScaler scaler(options);
  iterate(scaler, optimizer, problem, true);  // scale 32, one skip
  iterate(scaler, optimizer, problem);
  iterate(scaler, optimizer, problem);  // growth tracker 2
  const optim::ScalarMap state = scaler.state_dict();
  EXPECT_EQ(state.at("scale"), 32.0);
  EXPECT_EQ(state.at("growth_tracker"), 2.0);
  EXPECT_EQ(state.at("consecutive_skips"), 0.0);
  EXPECT_EQ(state.at("growth_interval"), 3.0);
  EXPECT_EQ(state.at("min_scale"), 2.0);

  const optim::ScalarMap loaded_state =
      optim::scalar_map_from_json(optim::to_json(state), "grad scaler state");
  amp::GradScaler restored;  // default options, replaced by the loaded ones
  restored.load_state_dict(loaded_state);
  EXPECT_EQ(restored.get_scale(), 32.0);
  EXPECT_EQ(restored.options().growth_interval(), 3);
  EXPECT_EQ(restored.state_dict(), state);
  // Both continue alike: one more clean step completes the growth interval.
  iterate(scaler, optimizer, problem);
  iterate(restored, optimizer, problem);
  EXPECT_EQ(scaler.get_scale(), 64.0);
  EXPECT_EQ(restored.get_scale(), 64.0);

  optim::ScalarMap extra = state;
  extra["unknown"] = 1.0;
  EXPECT_ERROR_CONTAINS(restored.load_state_dict(extra), "unknown");
}

TEST(GradScaler, MisuseIsAnError) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1));
  amp::GradScaler scaler;
  EXPECT_ERROR_CONTAINS(scaler.unscale_(optimizer), "scale() has not been called");
  scaler.scale(problem.loss()).backward();
  scaler.unscale_(optimizer);
  EXPECT_ERROR_CONTAINS(scaler.unscale_(optimizer), "unscale_() has already been called");
  scaler.step(optimizer);
  EXPECT_ERROR_CONTAINS(scaler.step(optimizer), "step() has already been called");
  EXPECT_ERROR_CONTAINS(scaler.unscale_(optimizer), "called after step()");
  scaler.update();
  EXPECT_ERROR_CONTAINS(scaler.update(), "no inf/NaN check was recorded");
  EXPECT_ERROR_CONTAINS(amp::GradScaler(amp::GradScalerOptions().growth_factor(0.5)),
                        "growth_factor > 1");
  EXPECT_ERROR_CONTAINS(amp::GradScaler(amp::GradScalerOptions().init_scale(1).min_scale(2)),
                        "min_scale <= init_scale");
}

TEST(GradScaler, DisabledIsAPassThrough) {
  LinearProblem problem;
  optim::SGD optimizer(problem.params(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().enabled(false));
  const Tensor loss = problem.loss();
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  loss.backward();
  const Tensor w_before = problem.w.detach().clone();
  scaler.step(optimizer);
  scaler.update();
  EXPECT_TRUE(all_close(problem.w, w_before - problem.a * 0.1, 1e-7, 1e-6));
  EXPECT_EQ(scaler.get_scale(), 1.0);
}

TEST(GradScaler, SixteenBitGradientsAreUnscaledAndChecked) {
  // A model kept in float16 (no float32 master copy) still works with the scaler.
  Tensor w = tensor({0.5, -1.0}).to(kFloat16).requires_grad_();
  optim::SGD optimizer({w}, optim::SGDOptions(0.5));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256));
  scaler.scale(sum(w * tensor({2.0, 4.0}).to(kFloat16))).backward();
  scaler.unscale_(optimizer);
  EXPECT_TRUE(all_close(w.grad(), tensor({2.0, 4.0}), 0, 0));
  scaler.step(optimizer);
  scaler.update();
  EXPECT_TRUE(all_close(w, tensor({-0.5, -3.0}), 0, 0));
}

// Issue 15, item 11: bfloat16 needs no scaler; one that is used anyway says so, once.
TEST(GradScaler, WarnsOnceWhenScalingBfloat16) {
  std::ostringstream captured;
  const auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(captured);
  add_log_sink(sink);
  amp::GradScaler scaler;
  const Tensor loss = tensor({2.0});
  EXPECT_EQ(scaler.scale(loss).item<float>(), 131072.0f);  // float32: no warning
  {
    amp::AutocastGuard autocast(kBFloat16);
    scaler.scale(loss);
  }
  scaler.scale(loss.to(kBFloat16));
  logger().flush();
  remove_log_sink(sink);
  const std::string text = captured.str();
  const std::string warning = "GradScaler: scaling a bfloat16 loss, which needs no scaling";
  const size_t first = text.find(warning);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(warning, first + 1), std::string::npos) << "warned more than once: " << text;
}

}  // namespace
}  // namespace minidl
