// train::Trainer with its gradients averaged over NCCL at world size 1 (the GPU kit's step
// "trainer on NCCL at world size 1 vs one process", tools/gpu/stages.py): DDP's GradientReducer
// over a one-rank NcclProcessGroup hooked on the model the Trainer trains, against the same
// training without it. The Trainer engages DDP only at world size > 1 and one GPU cannot hold two
// NCCL ranks, so this is what one GPU can run of the trainer's NCCL path: every bucket copied in,
// all-reduced (average) by NCCL on its stream and copied back, on every step. Skips, with the
// reason, without a GPU or without NCCL.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "minidl/data/dataloader.h"
#include "minidl/data/datasets/synthetic_dataset.h"
#include "minidl/distributed/distributed.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/random.h"
#include "minidl/optim/optim.h"
#include "minidl/train/trainer.h"
#include "test_util.h"

namespace minidl::train {
namespace {

constexpr int64_t kBatchSize = 32;
constexpr int64_t kTrainSize = 240;  // 7 full batches and one of 16 per epoch
constexpr int64_t kEpochs = 2;
constexpr size_t kBucketBytes = 4096;  // several buckets for this small model

std::shared_ptr<distributed::NcclProcessGroup> one_gpu_nccl_group() {
  static distributed::SingleProcessGroup bootstrap;
  static auto group = distributed::NcclProcessGroup::create(bootstrap, 0);
  return group;
}

// NCCL's group, counting the all-reduces that reach it, so that the test sees the reducer's
// collectives went through NCCL (an average over one rank changes no value).
class CountingGroup final : public distributed::ProcessGroup {
 public:
  explicit CountingGroup(std::shared_ptr<distributed::ProcessGroup> group)
      : group_(std::move(group)) {}
  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  std::string backend_name() const override { return group_->backend_name(); }
  std::shared_ptr<distributed::Work> all_reduce_async(const Tensor& tensor,
                                                      distributed::ReduceOp op) override {
    ++all_reduces;
    return group_->all_reduce_async(tensor, op);
  }
  std::shared_ptr<distributed::Work> broadcast_async(const Tensor& tensor, int root) override {
    return group_->broadcast_async(tensor, root);
  }
  std::shared_ptr<distributed::Work> all_gather_async(const Tensor& output,
                                                      const Tensor& input) override {
    return group_->all_gather_async(output, input);
  }
  std::shared_ptr<distributed::Work> reduce_scatter_async(const Tensor& output, const Tensor& input,
                                                          distributed::ReduceOp op) override {
    return group_->reduce_scatter_async(output, input, op);
  }
  std::shared_ptr<distributed::Work> barrier_async() override { return group_->barrier_async(); }

  std::atomic<int64_t> all_reduces{0};

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
};

struct Outcome {
  TrainingResult result;
  // The model's parameters and buffers, on the CPU, before and after training.
  std::vector<Tensor> initial, state;
};

std::vector<Tensor> state_on_cpu(const nn::Module& model) {
  std::vector<Tensor> state;
  for (const auto& item : model.state_dict()) state.push_back(item.value().to(kCPU));
  return state;
}

// Two epochs of SGD with momentum on a small convolutional model, eager steps (the reducer's
// hooks and end-of-backward callback are not captured into a CUDA graph); with `group`, DDP's
// reducer averages every gradient over it.
Outcome train(const std::shared_ptr<distributed::ProcessGroup>& group) {
  const Device gpu(kCUDA, 0);
  manual_seed(7);
  // No bias before batch norm: its gradient is zero (the norm takes the mean out), and every
  // parameter must move for the check at the end.
  nn::Sequential model{nn::Conv2d(nn::Conv2dOptions(1, 4, 3).bias(false)), nn::BatchNorm2d(4),
                       nn::ReLU(), nn::Flatten(), nn::Linear(4 * 12 * 12, 10)};
  model->to(gpu);
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const auto normalize = data::AugmentOptions().normalize({0.5f}, {0.25f});  // uint8 to float
  data::DataLoader train_loader(
      data::make_synthetic_dataset(kTrainSize, {1, 14, 14}, 10, 1),
      data::DataLoaderOptions(kBatchSize).shuffle(true).seed(3).device(gpu).augment(normalize));
  data::DataLoader test_loader(data::make_synthetic_dataset(100, {1, 14, 14}, 10, 2),
                               data::DataLoaderOptions(64).device(gpu).augment(normalize));
  std::unique_ptr<distributed::GradientReducer> reducer;
  if (group) {
    distributed::GradientReducer::NamedParameters parameters;
    for (const auto& item : model->named_parameters())
      parameters.emplace_back(item.key(), item.value());
    reducer = std::make_unique<distributed::GradientReducer>(std::move(parameters), group,
                                                             kBucketBytes, false);
  }
  Trainer trainer(model, optimizer, train_loader, test_loader,
                  TrainerOptions()
                      .epochs(kEpochs)
                      .cuda_graph(false)
                      .progress(ProgressMode::kNone)
                      .handle_signals(false));
  const std::vector<Tensor> initial = state_on_cpu(*model);
  const TrainingResult result = trainer.fit();
  reducer.reset();
  return {result, initial, state_on_cpu(*model)};
}

TEST(TrainerOnNccl, OneRankMatchesTheTrainerWithoutNccl) {
  SKIP_WITHOUT_CUDA();
  std::shared_ptr<distributed::NcclProcessGroup> nccl;
  try {
    nccl = one_gpu_nccl_group();
  } catch (const Error& error) {
    GTEST_SKIP() << error.what();
  }
  testing::DeterministicConvolutions deterministic;
  const auto counting = std::make_shared<CountingGroup>(nccl);
  const Outcome over_nccl = train(counting);
  const Outcome alone = train(nullptr);

  // Every step all-reduced every bucket: 8 steps per epoch, and 2 buckets (the linear layer's
  // 23 KiB of weights in one of their own, the rest in the other).
  EXPECT_EQ(over_nccl.result.steps, kEpochs * 8);
  EXPECT_GE(counting->all_reduces.load(), over_nccl.result.steps * 2);
  EXPECT_TRUE(nccl->failure().empty()) << nccl->failure();
  // The same arithmetic but for an average over one rank (a copy): equal but for the run-to-run
  // differences of the GPU's kernels, as in trainer_cuda_test.cpp.
  ASSERT_EQ(over_nccl.state.size(), alone.state.size());
  for (size_t i = 0; i < alone.state.size(); ++i)
    EXPECT_TRUE(testing::all_close(over_nccl.state[i], alone.state[i], 1e-5, 1e-5))
        << "state entry " << i;
  ASSERT_EQ(over_nccl.result.history.size(), alone.result.history.size());
  for (size_t e = 0; e < alone.result.history.size(); ++e) {
    EXPECT_NEAR(over_nccl.result.history[e].train_loss, alone.result.history[e].train_loss, 1e-5);
    EXPECT_NEAR(over_nccl.result.history[e].test_loss, alone.result.history[e].test_loss, 1e-5);
  }
  // And training moved every parameter: two untouched models would compare equal too.
  for (size_t i = 0; i < alone.state.size(); ++i)
    if (is_floating_point(alone.state[i].dtype()))
      EXPECT_FALSE(testing::all_close(alone.state[i], alone.initial[i], 1e-4, 0))
          << "state entry " << i << " did not change";
}

}  // namespace
}  // namespace minidl::train
