#pragma once
// What train::Trainer optimises and evaluates (Note [Objectives] in train/trainer.h): how a
// loader batch becomes the model's input and the target its output is scored against, the
// training loss, and what an evaluation sums.
//
//   Classification  float images [B, C, H, W] -> logits [B, classes]; labels [B].
//                   cross_entropy with label smoothing; accuracy: the largest logit is the label.
//   NextToken       a TokenWindowDataset's windows [B, 1, 1, T + 1] -> x [B, T] ->
//                   logits [B, T, V]; y [B, T] (x shifted by one, data::split_token_windows).
//                   cross_entropy(logits.view(-1, V), y.view(-1)), nanoGPT's loss;
//                   accuracy: the largest logit is the next token.
//
// An objective scores units: the target's elements, one per sample for a classifier, one per
// token for a GPT. Evaluations average over them, and throughput counts them (images/s,
// tokens/s).
#include <cstdint>
#include <string_view>

#include "minidl/core/tensor.h"

namespace minidl::train {

// A loader batch as the objective cuts it.
struct ObjectiveBatch {
  Tensor input;   // what the model is called on
  Tensor target;  // what its output is scored against; its elements are the scored units
};

class Objective {
 public:
  virtual ~Objective() = default;

  virtual const char* name() const = 0;
  // Checks a loader batch's images and labels (throwing minidl::Error naming the objective, what
  // it expected and what it found) and cuts them into the model's input and the target. Only
  // device work that a CUDA graph can capture: the graph step calls it on its static inputs.
  virtual ObjectiveBatch prepare(const Tensor& images, const Tensor& labels) const = 0;
  // The training loss of a batch: a float32 scalar, the mean over its units.
  virtual Tensor training_loss(const Tensor& output, const Tensor& target) const = 0;
  // Adds the batch's summed evaluation loss (float32 scalar) to `loss_sum` and its number of
  // correct predictions (int64 scalar) to `correct`, on the device.
  virtual void add_evaluation(const Tensor& output, const Tensor& target, Tensor& loss_sum,
                              Tensor& correct) const = 0;
  // Scored units in each sample of a batch with these images: 1 for a classifier, T for a GPT.
  virtual int64_t units_per_sample(const Tensor& images) const = 0;
  // The unit of throughput in progress and epoch lines: "img" or "tok".
  virtual std::string_view unit() const = 0;
};

class Classification final : public Objective {
 public:
  explicit Classification(double label_smoothing = 0);

  const char* name() const override { return "Classification"; }
  ObjectiveBatch prepare(const Tensor& images, const Tensor& labels) const override;
  Tensor training_loss(const Tensor& output, const Tensor& target) const override;
  // Cross-entropy without label smoothing, as the accuracy it sits beside.
  void add_evaluation(const Tensor& output, const Tensor& target, Tensor& loss_sum,
                      Tensor& correct) const override;
  int64_t units_per_sample(const Tensor&) const override { return 1; }
  std::string_view unit() const override { return "img"; }

  double label_smoothing() const { return label_smoothing_; }

 private:
  double label_smoothing_;
};

class NextToken final : public Objective {
 public:
  // Targets equal to ignore_index add nothing to the loss (nanoGPT's -1); they are still counted
  // as units, as the windows of a token file never hold it.
  static constexpr int64_t kIgnoreIndex = -1;

  const char* name() const override { return "NextToken"; }
  ObjectiveBatch prepare(const Tensor& images, const Tensor& labels) const override;
  Tensor training_loss(const Tensor& output, const Tensor& target) const override;
  void add_evaluation(const Tensor& output, const Tensor& target, Tensor& loss_sum,
                      Tensor& correct) const override;
  int64_t units_per_sample(const Tensor& images) const override;
  std::string_view unit() const override { return "tok"; }
};

}  // namespace minidl::train
