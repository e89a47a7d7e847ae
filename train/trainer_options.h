#pragma once
// How Trainer::fit runs, as a small struct with chained setters:
//
//   train::TrainerOptions().epochs(10).checkpoint_dir("runs/lenet").resume("auto")
//       .metrics_path("runs/lenet/metrics.jsonl").model_name("lenet")
#include <cstdint>
#include <filesystem>
#include <string>

#include "minidl/core/dtype.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/train/run_settings.h"

namespace minidl::train {

// How progress inside an epoch is shown (the line after each epoch is always printed).
enum class ProgressMode {
  kAuto,   // kLive when stdout is a terminal, else kPlain
  kLive,   // one line rewritten in place, a few times a second
  kPlain,  // a plain line every log_every() steps, for logs and CI
  kNone,   // nothing inside an epoch
};

class TrainerOptions {
 public:
  TrainerOptions& epochs(int64_t value) {
    epochs_ = value;
    return *this;
  }
  // Stop after this many optimizer steps in all (counting those of a resumed run's past); the
  // epoch in progress ends there, is evaluated and checkpointed. 0: no limit.
  TrainerOptions& max_steps(int64_t value) {
    max_steps_ = value;
    return *this;
  }
  TrainerOptions& progress(ProgressMode value) {
    progress_ = value;
    return *this;
  }
  // Steps between plain progress lines.
  TrainerOptions& log_every(int64_t value) {
    log_every_ = value;
    return *this;
  }
  // A JSON object per epoch is appended here (see train/metrics_log.h). Empty: none.
  TrainerOptions& metrics_path(std::filesystem::path value) {
    metrics_path_ = std::move(value);
    return *this;
  }
  // Where training checkpoints go (see train/training_checkpoint.h). Empty: none.
  TrainerOptions& checkpoint_dir(std::filesystem::path value) {
    checkpoint_dir_ = std::move(value);
    return *this;
  }
  // A checkpoint after every this many epochs; there is always one at the end of the run.
  TrainerOptions& checkpoint_every(int64_t value) {
    checkpoint_every_ = value;
    return *this;
  }
  // How many of the newest checkpoints are kept in checkpoint_dir.
  TrainerOptions& keep_checkpoints(int64_t value) {
    keep_checkpoints_ = value;
    return *this;
  }
  // "" starts afresh, "auto" continues from the newest checkpoint in checkpoint_dir (afresh if
  // there is none), anything else is the path of a checkpoint file to continue from.
  TrainerOptions& resume(std::string value) {
    resume_ = std::move(value);
    return *this;
  }
  // A run that starts afresh (resume "") in a checkpoint_dir that holds checkpoints already
  // removes them first; without it, such a run is refused (Note [One run per checkpoint folder]
  // in train/trainer.h).
  TrainerOptions& overwrite(bool value) {
    overwrite_ = value;
    return *this;
  }
  // The settings that define this run, recorded in every checkpoint; resuming from a checkpoint
  // whose recorded settings differ is refused, naming each difference (train/run_settings.h).
  // Leave out what may change on resume (epochs, paths, logging, the device). Empty: none.
  TrainerOptions& run_settings(RunSettings value) {
    run_settings_ = std::move(value);
    return *this;
  }
  // Written into checkpoints; resuming from a checkpoint of another model or dataset is refused.
  TrainerOptions& model_name(std::string value) {
    model_name_ = std::move(value);
    return *this;
  }
  TrainerOptions& dataset_name(std::string value) {
    dataset_name_ = std::move(value);
    return *this;
  }
  // Catch SIGINT and SIGTERM: finish the step, write a checkpoint, and return with
  // TrainingResult::stop_signal set. A second signal ends the process at once.
  TrainerOptions& handle_signals(bool value) {
    handle_signals_ = value;
    return *this;
  }
  TrainerOptions& label_smoothing(double value) {
    label_smoothing_ = value;
    return *this;
  }
  // kFloat32, or mixed precision: kBFloat16, or kFloat16 with dynamic loss scaling (the trainer's
  // amp::GradScaler, saved in checkpoints). Parameters and optimizer state stay float32.
  TrainerOptions& precision(DType value) {
    precision_ = value;
    return *this;
  }
  // The GradScaler's settings for float16 (init_scale, growth_interval, ...); its enabled() is
  // ignored: the scaler is on for float16 and off otherwise.
  TrainerOptions& grad_scaler(amp::GradScalerOptions value) {
    grad_scaler_ = value;
    return *this;
  }
  // Capture the training step in a CUDA graph and replay it (train/train_step_graph.h),
  // where that applies: a model on a GPU, one process (no data parallelism), and no nn::Dropout
  // with p > 0 (its random mask cannot be replayed). A model that calls the functional dropout
  // itself needs cuda_graph(false). Replays compute what eager steps compute; they only skip
  // the host's work.
  TrainerOptions& cuda_graph(bool value) {
    cuda_graph_ = value;
    return *this;
  }
  // Gradient accumulation: each optimizer step takes this many consecutive batches of the
  // loader (micro-batches), each one's loss divided by their number, so that with a mean loss
  // the step is the one a batch this many times larger would take (PyTorch's recipe). An epoch's
  // last group may be shorter; it steps all the same, its losses divided by its own size.
  // Steps, max_steps, log_every and a scheduler count optimizer steps. Saved in checkpoints: a
  // run resumes only with the value it was trained with. Not with the CUDA-graph step
  // (cuda_graph(false) is needed on a GPU; see Trainer's constructor).
  TrainerOptions& accumulate_steps(int64_t value) {
    accumulate_steps_ = value;
    return *this;
  }
  // Clip the gradients' total 2-norm to this before each optimizer step
  // (nn::utils::clip_grad_norm_ over the model's parameters, after the GradScaler's unscale_
  // in float16). 0: no clipping. Saved in checkpoints, as accumulate_steps.
  TrainerOptions& clip_grad_norm(double max_norm) {
    clip_grad_norm_ = max_norm;
    return *this;
  }

  int64_t epochs() const { return epochs_; }
  int64_t max_steps() const { return max_steps_; }
  ProgressMode progress() const { return progress_; }
  int64_t log_every() const { return log_every_; }
  const std::filesystem::path& metrics_path() const { return metrics_path_; }
  const std::filesystem::path& checkpoint_dir() const { return checkpoint_dir_; }
  int64_t checkpoint_every() const { return checkpoint_every_; }
  int64_t keep_checkpoints() const { return keep_checkpoints_; }
  const std::string& resume() const { return resume_; }
  bool overwrite() const { return overwrite_; }
  const RunSettings& run_settings() const { return run_settings_; }
  const std::string& model_name() const { return model_name_; }
  const std::string& dataset_name() const { return dataset_name_; }
  bool handle_signals() const { return handle_signals_; }
  double label_smoothing() const { return label_smoothing_; }
  DType precision() const { return precision_; }
  const amp::GradScalerOptions& grad_scaler() const { return grad_scaler_; }
  bool cuda_graph() const { return cuda_graph_; }
  int64_t accumulate_steps() const { return accumulate_steps_; }
  double clip_grad_norm() const { return clip_grad_norm_; }

 private:
  int64_t epochs_ = 1;
  int64_t max_steps_ = 0;
  ProgressMode progress_ = ProgressMode::kAuto;
  int64_t log_every_ = 100;
  std::filesystem::path metrics_path_;
  std::filesystem::path checkpoint_dir_;
  int64_t checkpoint_every_ = 1;
  int64_t keep_checkpoints_ = 3;
  std::string resume_;
  bool overwrite_ = false;
  RunSettings run_settings_;
  std::string model_name_ = "model";
  std::string dataset_name_ = "dataset";
  bool handle_signals_ = true;
  double label_smoothing_ = 0;
  DType precision_ = kFloat32;
  amp::GradScalerOptions grad_scaler_;
  bool cuda_graph_ = true;
  int64_t accumulate_steps_ = 1;
  double clip_grad_norm_ = 0;
};

}  // namespace minidl::train
