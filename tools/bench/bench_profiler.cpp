// What minidl's profiler costs (core/profiler.h, core/profile.h), on the CPU:
//
//   scope/off                   one op's ProfileScope while nothing profiles (what every op
//                               pays always)
//   scope_with_inputs/off       the same with two input tensors named (record_shapes' form)
//   lenet_step/profile:off      a LeNet training step (batch 64, SGD with momentum) with no
//                               profile; counter scopes_per_step, the spans one step records
//   lenet_step/profile:on       the same inside a profiler::Profile
//   lenet_step/profile:shapes   ... recording shapes
//
// The profiler's cost while off is scope/off times scopes_per_step, against lenet_step/
// profile:off; the lenet_step rows run interleaved (--benchmark_enable_random_interleaving).
//
//   bench_profiler [Google Benchmark flags, e.g. --benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>

#include "minidl/core/factories.h"
#include "minidl/core/profile.h"
#include "minidl/core/profiler.h"
#include "minidl/models/lenet.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/optim/sgd.h"

namespace {

using namespace minidl;

void scope_off(benchmark::State& state) {
  for (auto _ : state) {
    const ProfileScope scope("op");
    benchmark::DoNotOptimize(&scope);
  }
}
BENCHMARK(scope_off)->Name("scope/off");

void scope_with_inputs_off(benchmark::State& state) {
  const Tensor a = zeros({2, 3}), b = zeros({3});
  for (auto _ : state) {
    const ProfileScope scope("op", {a, b});
    benchmark::DoNotOptimize(&scope);
  }
}
BENCHMARK(scope_with_inputs_off)->Name("scope_with_inputs/off");

struct LeNetStep {
  models::LeNet model;
  optim::SGD optimizer{model->parameters(), optim::SGDOptions(0.01).momentum(0.9)};
  Tensor images = randn({64, 1, 28, 28});
  Tensor labels = randint(0, 10, {64});
  void operator()() {
    optimizer.zero_grad();
    cross_entropy(model->forward(images), labels).backward();
    optimizer.step();
  }
};

// 0: no profile; 1: inside a Profile; 2: inside a Profile that records shapes.
void lenet_step(benchmark::State& state) {
  manual_seed(1);
  LeNetStep step;
  step();  // the first step allocates
  int64_t scopes_per_step = 0;
  {
    profiler::Profile one_step;
    step();
    one_step.stop();
    for (const ProfileSpan& span : one_step.spans()) scopes_per_step += span.event ? 0 : 1;
  }
  std::optional<profiler::Profile> profile;
  if (state.range(0) > 0)
    profile.emplace(profiler::ProfileOptions{.record_shapes = state.range(0) == 2});
  for (auto _ : state) step();
  state.counters["scopes_per_step"] = static_cast<double>(scopes_per_step);
}
BENCHMARK(lenet_step)
    ->Name("lenet_step")
    ->ArgName("profile")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
