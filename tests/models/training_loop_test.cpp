// A LibTorch-style training loop (the one docs/guide/training.md shows): LeNet and ResNet20 with
// SGD on a fixed batch of random data, whose loss must fall as the model fits it. The images are
// noisy copies of one random prototype per class, so there is something to learn from the pixels.
#include <vector>

#include "minidl/models/models.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/shape.h"
#include "minidl/optim/optim.h"
#include "test_util.h"

namespace minidl {
namespace {

namespace F = nn::functional;

// Random int64 class labels in [0, classes).
Tensor random_labels(int64_t count, int64_t classes) {
  return (rand({count}) * static_cast<double>(classes)).to(kInt64);
}

// For each label, its class's prototype [C, H, W] plus noise: [N, C, H, W].
Tensor noisy_prototypes(const Tensor& labels, int64_t classes, const Shape& image_shape) {
  Shape prototype_shape{classes};
  prototype_shape.insert(prototype_shape.end(), image_shape.begin(), image_shape.end());
  Tensor prototypes = randn(prototype_shape);
  Tensor images = index_select(prototypes, 0, labels);
  return images + randn(images.sizes()) * 0.5;
}

// Trains `model` for `steps` steps on one batch and returns the loss of every step.
template <class Model>
std::vector<float> fit_one_batch(Model& model, const Tensor& images, const Tensor& labels,
                                 int steps, double lr) {
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(lr).momentum(0.9));
  model->train();
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    Tensor loss = F::cross_entropy(model->forward(images), labels);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<float>());
  }
  return losses;
}

TEST(TrainingLoop, LeNetLossDecreasesWithSGD) {
  manual_seed(0);
  models::LeNet model;
  Tensor labels = random_labels(32, 10);
  Tensor images = noisy_prototypes(labels, 10, {1, 28, 28});
  const std::vector<float> losses = fit_one_batch(model, images, labels, /*steps=*/20, 0.05);
  // Starts near ln(10) (about uniform predictions) and falls as the classes separate.
  EXPECT_GT(losses.front(), 2.0f);
  EXPECT_LT(losses.back(), 0.75f * losses.front())
      << "first loss " << losses.front() << ", last loss " << losses.back();
}

TEST(TrainingLoop, ResNet20LossDecreasesWithSGD) {
  manual_seed(1);
  models::ResNet20 model;
  Tensor labels = random_labels(8, 10);
  Tensor images = noisy_prototypes(labels, 10, {3, 16, 16});
  const std::vector<float> losses = fit_one_batch(model, images, labels, /*steps=*/6, 0.05);
  EXPECT_LT(losses.back(), losses.front())
      << "first loss " << losses.front() << ", last loss " << losses.back();
  // Training mode updated batch norm's running statistics at every step.
  EXPECT_EQ(model->bn1->num_batches_tracked.item<int64_t>(), 6);
}

}  // namespace
}  // namespace minidl
