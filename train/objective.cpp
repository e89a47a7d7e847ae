#include "minidl/train/objective.h"

#include "minidl/core/error.h"
#include "minidl/data/datasets/token_window_dataset.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/reduce.h"

namespace minidl::train {

// ---- Classification ----

Classification::Classification(double label_smoothing) : label_smoothing_(label_smoothing) {}

ObjectiveBatch Classification::prepare(const Tensor& images, const Tensor& labels) const {
  // The model wants float pixels, which the loader's normalisation makes.
  MINIDL_CHECK(is_floating_point(images.dtype()), "Trainer: expected float images from ",
               "the loader (normalise them with DataLoaderOptions::augment), got ", images.dtype());
  return {images, labels};
}

Tensor Classification::training_loss(const Tensor& output, const Tensor& target) const {
  return cross_entropy(output, target, Reduction::Mean, label_smoothing_);
}

void Classification::add_evaluation(const Tensor& output, const Tensor& target, Tensor& loss_sum,
                                    Tensor& correct) const {
  loss_sum.add_(cross_entropy(output, target, Reduction::Sum));
  correct.add_(sum(eq(argmax(output, 1), target).to(kInt64)));
}

// ---- NextToken ----

namespace {

// logits [B, T, V] for targets [B, T], as rows [B * T, V].
Tensor logit_rows(const Tensor& logits, const Tensor& targets) {
  MINIDL_CHECK(
      logits.dim() == 3 && logits.size(0) == targets.size(0) && logits.size(1) == targets.size(1),
      "Trainer (NextToken): expected the model's logits [B, T, V] = [", targets.size(0), ", ",
      targets.size(1), ", V] for inputs [B, T], got ", logits.sizes());
  return logits.reshape({-1, logits.size(2)});
}

}  // namespace

ObjectiveBatch NextToken::prepare(const Tensor& images, const Tensor&) const {
  MINIDL_CHECK(images.dtype() == kInt64 && images.dim() == 4 && images.size(1) == 1 &&
                   images.size(2) == 1 && images.size(3) >= 2,
               "Trainer (NextToken): expected batches of token windows, int64 [B, 1, 1, T + 1] "
               "with T >= 1 (a data::TokenWindowDataset's), got ",
               images.dtype(), " ", images.sizes());
  data::TokenWindowBatch windows = data::split_token_windows(images);
  return {std::move(windows.inputs), std::move(windows.targets)};
}

Tensor NextToken::training_loss(const Tensor& output, const Tensor& target) const {
  return cross_entropy(logit_rows(output, target), target.reshape({-1}), Reduction::Mean,
                       /*label_smoothing=*/0, kIgnoreIndex);
}

void NextToken::add_evaluation(const Tensor& output, const Tensor& target, Tensor& loss_sum,
                               Tensor& correct) const {
  const Tensor rows = logit_rows(output, target);
  const Tensor targets = target.reshape({-1});
  loss_sum.add_(cross_entropy(rows, targets, Reduction::Sum, /*label_smoothing=*/0, kIgnoreIndex));
  correct.add_(sum(eq(argmax(rows, 1), targets).to(kInt64)));
}

int64_t NextToken::units_per_sample(const Tensor& images) const { return images.size(-1) - 1; }

}  // namespace minidl::train
