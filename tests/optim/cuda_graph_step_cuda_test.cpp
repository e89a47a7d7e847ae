// Whole training steps captured into a CUDA graph (core/cuda/graph.h) against the same steps run
// eagerly: LeNet in float32 with a scheduler changing the lr at every step, in float16 with a
// GradScaler, and with an eager step of another batch size between replays; plus the fused SGD
// step's replay hooks on their own. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/models/lenet.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/random.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/optim/lr_scheduler.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

const Device kGpu(kCUDA, 0);

struct Batch {
  Tensor images;  // [N, 1, 28, 28] float32
  Tensor labels;  // [N] int64
};

std::vector<Batch> make_batches(int count, int64_t batch_size) {
  manual_seed(1234);
  std::vector<Batch> batches;
  for (int i = 0; i < count; ++i) {
    Batch batch;
    batch.images = randn({batch_size, 1, 28, 28}).to(kGpu);
    batch.labels = (rand({batch_size}) * 10.0).to(kInt64).to(kGpu);
    batches.push_back(batch);
  }
  return batches;
}

// One training run: LeNet, SGD with momentum, Nesterov and weight decay, a cosine schedule that
// changes the lr at every step, and a GradScaler (enabled for float16 only).
struct TrainingRun {
  explicit TrainingRun(DType precision, const amp::GradScalerOptions& scaler_options = {})
      : precision(precision),
        model([] {
          manual_seed(0);  // every run starts from the same weights
          return models::LeNet();
        }()),
        optimizer(to_gpu(model),
                  optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4)),
        scheduler(optimizer, 12),
        scaler(amp::GradScalerOptions(scaler_options).enabled(precision == kFloat16)) {}

  static std::vector<Tensor> to_gpu(models::LeNet& model) {
    model->to(kGpu);
    return model->parameters();
  }

  // zero_grad, forward and loss (under autocast for float16), backward, step, update: what the
  // trainers and bench run. The scheduler steps outside, as the host does between replays.
  void step(const Tensor& images, const Tensor& labels) {
    optimizer.zero_grad();
    Tensor loss;
    {
      amp::AutocastGuard autocast(kFloat16, precision == kFloat16);
      loss = cross_entropy(model->forward(images), labels);
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
  }

  DType precision;
  models::LeNet model;
  optim::SGD optimizer;
  optim::CosineAnnealingLR scheduler;
  amp::GradScaler scaler;
};

// The same run with its full-size steps replayed from a graph: `warmup` eager steps, a capture,
// then replays, each after its batch is copied into the static inputs. `eager_between` names
// steps to run eagerly instead (e.g. an epoch's last, smaller batch).
struct GraphedRun {
  GraphedRun(DType precision, const Batch& first, const amp::GradScalerOptions& scaler_options = {})
      : stream(cuda::Stream::create(0)),
        run(precision, scaler_options),
        static_images(first.images.clone()),
        static_labels(first.labels.clone()) {
    // The model, the batches and the static inputs were made on the default stream; this run's
    // stream does not wait for it by itself (it is non-blocking).
    cuda::synchronize();
  }

  void step(int index, const Batch& batch, int warmup) {
    cuda::StreamGuard on_stream(stream);
    if (index < warmup || batch.images.size(0) != static_images.size(0)) {
      run.step(batch.images, batch.labels);
    } else {
      if (!graph.has_graph()) {
        cuda::GraphCapture capture(graph);
        run.step(static_images, static_labels);
        capture.end();
      }
      static_images.copy_(batch.images);
      static_labels.copy_(batch.labels);
      graph.replay();  // the capture ran nothing: its step is this replay
    }
    run.scheduler.step();
  }

  cuda::Stream stream;
  TrainingRun run;
  Tensor static_images, static_labels;
  cuda::CudaGraph graph;
};

void expect_same_training_state(TrainingRun& graphed, TrainingRun& eager, double atol,
                                double rtol) {
  cuda::synchronize();  // the graphed run's stream, before the default stream reads its tensors
  const std::vector<Tensor> a = graphed.model->parameters(), b = eager.model->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    EXPECT_TRUE(all_close(a[i].to(kCPU), b[i].to(kCPU), atol, rtol));
    EXPECT_TRUE(all_close(graphed.optimizer.state(a[i])->at("momentum_buffer").to(kCPU),
                          eager.optimizer.state(b[i])->at("momentum_buffer").to(kCPU), atol, rtol));
  }
  EXPECT_EQ(graphed.scheduler.get_last_lr(), eager.scheduler.get_last_lr());
}

TEST(CudaGraphStep, ReplaysOfALeNetStepMatchEagerStepsWithTheLrChangingEveryStep) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  const std::vector<Batch> batches = make_batches(10, 64);
  GraphedRun graphed(kFloat32, batches[0]);
  TrainingRun eager(kFloat32);
  for (int k = 0; k < 10; ++k) {
    graphed.step(k, batches[static_cast<size_t>(k)], /*warmup=*/2);
    eager.step(batches[static_cast<size_t>(k)].images, batches[static_cast<size_t>(k)].labels);
    eager.scheduler.step();
  }
  EXPECT_EQ(graphed.graph.replays(), 8u);
  expect_same_training_state(graphed.run, eager, 1e-6, 1e-5);
}

TEST(CudaGraphStep, ReplaysOfAFloat16StepWithAGradScalerMatchEagerSteps) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  // A scale too large at first (steps skipped and the scale halved on the device), then growth
  // every 3 clean steps: the scaler's state changes during the replays.
  const auto scaler_options =
      amp::GradScalerOptions().init_scale(std::ldexp(1.0, 28)).growth_interval(3);
  const std::vector<Batch> batches = make_batches(14, 64);
  GraphedRun graphed(kFloat16, batches[0], scaler_options);
  TrainingRun eager(kFloat16, scaler_options);
  for (int k = 0; k < 14; ++k) {
    graphed.step(k, batches[static_cast<size_t>(k)], /*warmup=*/1);
    eager.step(batches[static_cast<size_t>(k)].images, batches[static_cast<size_t>(k)].labels);
    eager.scheduler.step();
  }
  EXPECT_EQ(graphed.graph.replays(), 13u);
  cuda::synchronize();
  EXPECT_EQ(graphed.run.scaler.get_scale(), eager.scaler.get_scale());
  EXPECT_LT(eager.scaler.get_scale(), std::ldexp(1.0, 28));  // some steps were skipped
  expect_same_training_state(graphed.run, eager, 1e-6, 1e-5);
}

TEST(CudaGraphStep, AnEagerStepOfAnotherBatchSizeBetweenReplaysChangesNothingInTheGraph) {
  SKIP_WITHOUT_CUDA();
  testing::DeterministicConvolutions deterministic;
  std::vector<Batch> batches = make_batches(9, 64);
  // Step 5 is an epoch's last batch, of 20 images: run eagerly between replays.
  batches[5].images = batches[5].images.narrow(0, 0, 20).contiguous();
  batches[5].labels = batches[5].labels.narrow(0, 0, 20).contiguous();
  for (DType precision : {kFloat32, kFloat16}) {
    SCOPED_TRACE(dtype_name(precision));
    GraphedRun graphed(precision, batches[0]);
    TrainingRun eager(precision);
    for (int k = 0; k < 9; ++k) {
      graphed.step(k, batches[static_cast<size_t>(k)], /*warmup=*/2);
      eager.step(batches[static_cast<size_t>(k)].images, batches[static_cast<size_t>(k)].labels);
      eager.scheduler.step();
    }
    EXPECT_EQ(graphed.graph.replays(), 6u);  // 2 warm-up steps, the small step eager
    cuda::synchronize();
    if (precision == kFloat16) EXPECT_EQ(graphed.run.scaler.get_scale(), eager.scaler.get_scale());
    expect_same_training_state(graphed.run, eager, 1e-6, 1e-5);
  }
}

// ---- the fused SGD step's replay hooks, on bare parameters ----

struct BareParameters {
  BareParameters() : stream(cuda::Stream::create(0)), on_stream(stream) {
    for (int64_t numel : {5, 40000}) {
      Tensor p = full({numel}, 1.0, kGpu).requires_grad_(true);
      p.set_grad(full({numel}, 1.0, kGpu));  // kept: the graph reads these gradients
      params.push_back(p);
    }
  }
  cuda::Stream stream;
  cuda::StreamGuard on_stream;
  std::vector<Tensor> params;
};

TEST(CudaGraphStep, EachReplayUsesTheLearningRateSetBeforeIt) {
  SKIP_WITHOUT_CUDA();
  BareParameters bare;
  optim::SGD optimizer(bare.params, optim::SGDOptions(0.5));
  optimizer.step();  // eager: p = 1 - 0.5
  cuda::CudaGraph graph;
  {
    cuda::GraphCapture capture(graph);
    optimizer.step();
    capture.end();
  }
  double expected = 0.5;
  for (double lr : {0.25, 0.125, 0.125, 0.0625}) {
    optimizer.param_groups()[0].options().set_lr(lr);
    graph.replay();
    expected -= lr;
  }
  for (const Tensor& p : bare.params) {
    EXPECT_EQ(p.to(kCPU).data_ptr<float>()[0], static_cast<float>(expected));
    EXPECT_EQ(p.to(kCPU).data_ptr<float>()[p.numel() - 1], static_cast<float>(expected));
  }
}

TEST(CudaGraphStep, CapturingBeforeTheMomentumBuffersExistIsAClearError) {
  SKIP_WITHOUT_CUDA();
  BareParameters bare;
  optim::SGD optimizer(bare.params, optim::SGDOptions(0.1).momentum(0.9));
  cuda::CudaGraph graph;
  EXPECT_ERROR_CONTAINS(
      [&] {
        cuda::GraphCapture capture(graph);
        optimizer.step();
        capture.end();
      }(),
      "has no momentum buffer yet, and a CUDA graph is being captured; run one step eagerly "
      "before capturing");
  EXPECT_EQ(optimizer.state(bare.params[0]), nullptr);  // the failed step changed nothing
  EXPECT_FALSE(graph.has_graph());
  optimizer.step();  // eagerly, it works
}

TEST(CudaGraphStep, ChangingWhetherAGroupHasMomentumAfterTheCaptureIsAClearError) {
  SKIP_WITHOUT_CUDA();
  BareParameters bare;
  optim::SGD optimizer(bare.params, optim::SGDOptions(0.1).momentum(0.9));
  optimizer.step();
  cuda::CudaGraph graph;
  {
    cuda::GraphCapture capture(graph);
    optimizer.step();
    capture.end();
  }
  graph.replay();
  auto& options = dynamic_cast<optim::SGDOptions&>(optimizer.param_groups()[0].options());
  options.momentum(0);
  EXPECT_ERROR_CONTAINS(graph.replay(),
                        "momentum is 0 but was nonzero when the step was "
                        "captured into a CUDA graph");
}

TEST(CudaGraphStep, AGraphOutlivesItsOptimizerWithItsLastHyperParameters) {
  SKIP_WITHOUT_CUDA();
  BareParameters bare;
  cuda::CudaGraph graph;
  {
    optim::SGD optimizer(bare.params, optim::SGDOptions(0.25));
    optimizer.step();
    cuda::GraphCapture capture(graph);
    optimizer.step();
    capture.end();
  }
  graph.replay();
  graph.replay();
  EXPECT_EQ(bare.params[0].to(kCPU).data_ptr<float>()[0], 0.25f);  // 1 - 3 * 0.25
}

TEST(CudaGraphStep, AGradScalerWithoutStateCannotBeCaptured) {
  SKIP_WITHOUT_CUDA();
  BareParameters bare;
  amp::GradScaler scaler;
  cuda::CudaGraph graph;
  const Tensor loss = full({}, 1.0, kGpu);
  EXPECT_ERROR_CONTAINS(
      [&] {
        cuda::GraphCapture capture(graph);
        (void)scaler.scale(loss);
        capture.end();
      }(),
      "GradScaler scale: the scaler's state is made by its first scale(), and a CUDA graph is "
      "being captured");
}

}  // namespace
}  // namespace minidl
