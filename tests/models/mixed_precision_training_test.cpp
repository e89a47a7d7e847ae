// Mixed-precision training end to end on the CPU: LeNet on real Fashion-MNIST for 3 epochs in
// float32, in bfloat16 autocast, and in float16 autocast with a GradScaler, from the same seed
// (same initial weights, same batch order). The 16-bit runs must reach the float32 run's test
// accuracy within one percentage point.
//
// A subset keeps the test near 30 s on an idle 2-core CPU: the first 6000 training images
// (about 600 per class), batches of 64, and the whole test split (10000 images: forward only,
// and with fewer the accuracy of two nearly equal models differs by sampling noise alone). The
// learning rate is modest (0.01, momentum 0.9) because a larger one makes training chaotic:
// rounding differences then grow into different models, 1 to 2 points apart, in any precision.
// 16-bit floats are converted in software on the CPU, so this checks the policy and the
// scaler, not speed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/data/data.h"
#include "minidl/models/models.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;

constexpr int64_t kTrainSubset = 6000, kTestSubset = 10000;
constexpr int64_t kBatchSize = 64;
constexpr double kLearningRate = 0.01;
constexpr int kEpochs = 3;
constexpr uint64_t kSeed = 7;

std::shared_ptr<data::InMemoryDataset> first(const data::InMemoryDataset& dataset, int64_t count) {
  return std::make_shared<data::InMemoryDataset>(dataset.images().narrow(0, 0, count),
                                                 dataset.labels().narrow(0, 0, count),
                                                 dataset.num_classes());
}

// uint8 pixels [B, 1, 28, 28] -> float32 in [0, 1], centred as Fashion-MNIST's mean (0.286)
// and std (0.353) suggest.
Tensor normalized(const Tensor& images) {
  return (images.to(kFloat32) * (1.0 / 255.0) - 0.286) * (1.0 / 0.353);
}

struct Precision {
  std::optional<DType> autocast;  // none: float32
  bool grad_scaler = false;
};

// Trains a fresh LeNet (seeded) and returns its test accuracy in percent.
double train_and_test(const Precision& precision,
                      const std::shared_ptr<data::InMemoryDataset>& train,
                      const std::shared_ptr<data::InMemoryDataset>& test) {
  manual_seed(kSeed);
  models::LeNet model;
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(kLearningRate).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().enabled(precision.grad_scaler));
  const DType low = precision.autocast.value_or(kBFloat16);
  const bool autocast = precision.autocast.has_value();

  data::DataLoader train_loader(train,
                                data::DataLoaderOptions(kBatchSize).shuffle(true).seed(kSeed));
  model->train();
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    for (data::Batch& batch : train_loader) {
      optimizer.zero_grad();
      Tensor loss;
      {
        amp::AutocastGuard guard(low, autocast);
        loss = F::cross_entropy(model->forward(normalized(batch.images)), batch.labels);
      }
      EXPECT_EQ(loss.dtype(), kFloat32);
      scaler.scale(loss).backward();
      scaler.step(optimizer);
      scaler.update();
    }
  }
  for (const Tensor& param : model->parameters()) EXPECT_EQ(param.dtype(), kFloat32);

  model->eval();
  NoGradGuard no_grad;
  data::DataLoader test_loader(test, data::DataLoaderOptions(1000));
  int64_t correct = 0;
  for (data::Batch& batch : test_loader) {
    amp::AutocastGuard guard(low, autocast);
    const Tensor predicted = argmax(model->forward(normalized(batch.images)), 1);
    correct += sum(eq(predicted, batch.labels)).item<int64_t>();
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(test->size());
}

TEST(MixedPrecisionTraining, LeNetFashionMnistMatchesFloat32WithinOnePoint) {
  if (!std::filesystem::is_directory(data::fashion_mnist_directory()))
    GTEST_SKIP() << data::fashion_mnist_directory()
                 << " does not exist: install the Debian package dataset-fashion-mnist";
  const auto train = first(*data::read_fashion_mnist(data::Split::Train), kTrainSubset);
  const auto test = first(*data::read_fashion_mnist(data::Split::Test), kTestSubset);

  auto timed = [&](const Precision& precision, const char* name) {
    const auto start = std::chrono::steady_clock::now();
    const double accuracy = train_and_test(precision, train, test);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    std::cout << name << ": test accuracy " << accuracy << "% (" << seconds.count() << " s)\n";
    return accuracy;
  };
  const double float32 = timed({}, "float32");
  const double bfloat16 = timed({kBFloat16, false}, "bfloat16 autocast");
  const double float16 = timed({kFloat16, true}, "float16 autocast + GradScaler");
  RecordProperty("float32_accuracy", std::to_string(float32));
  RecordProperty("bfloat16_accuracy", std::to_string(bfloat16));
  RecordProperty("float16_accuracy", std::to_string(float16));
  // It learned something: well above chance (10%).
  EXPECT_GT(float32, 70.0);
  EXPECT_NEAR(bfloat16, float32, 1.0);
  EXPECT_NEAR(float16, float32, 1.0);
}

}  // namespace
}  // namespace minidl
