#pragma once
// How Trainer::fit runs, as a small struct with chained setters:
//
//   train::TrainerOptions().epochs(10).checkpoint_dir("runs/lenet").resume("auto")
//       .metrics_path("runs/lenet/metrics.jsonl").model_name("lenet")
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "minidl/core/arg.h"
#include "minidl/core/dtype.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/train/objective.h"
#include "minidl/train/run_settings.h"

namespace minidl::train {

// How progress inside an epoch is shown (the line after each epoch is always printed).
enum class ProgressMode {
  kAuto,   // kLive when stdout is a terminal, else kPlain
  kLive,   // one line rewritten in place, a few times a second
  kPlain,  // a plain line every log_every() steps, for logs and CI
  kNone,   // nothing inside an epoch
};

// Optimizer steps (first, last]: those after the first `first` up to the `last`-th.
using StepRange = std::pair<int64_t, int64_t>;

class TrainerOptions {
 public:
  MINIDL_ARG(int64_t, epochs) = 1;
  // Stop after this many optimizer steps in all (counting those of a resumed run's past); the
  // epoch in progress ends there, is evaluated and checkpointed. 0: no limit.
  MINIDL_ARG(int64_t, max_steps) = 0;
  MINIDL_ARG(ProgressMode, progress) = ProgressMode::kAuto;
  // Steps between plain progress lines.
  MINIDL_ARG(int64_t, log_every) = 100;
  // A JSON object per epoch is appended here (see train/metrics_log.h). Empty: none.
  MINIDL_ARG(std::filesystem::path, metrics_path);
  // TensorBoard event files go into this folder (train/tensorboard_writer.h), from rank 0 alone:
  // after each evaluation the values of the metrics line (tags loss/train, loss/test,
  // accuracy/test, lr, throughput/images_per_sec and, for NextToken, throughput/tokens_per_sec,
  // at the step it ends), and every log_every() steps the epoch's running training loss, the
  // lr, the gradients' total norm when clip_grad_norm() clips, and float16's loss scale (tags
  // step/train_loss, step/lr, step/grad_norm, step/grad_scale). Empty: none.
  MINIDL_ARG(std::filesystem::path, tensorboard_dir);
  // With tensorboard_dir: histograms of every parameter and its gradient (tags
  // weights/<name>, grads/<name>) after every this many evaluations. 0: none.
  MINIDL_ARG(int64_t, tensorboard_histogram_every) = 0;
  // Profile the optimizer steps after the first profile_steps().first up to the
  // profile_steps().second-th (core/profile.h), on rank 0: the summary table goes to the log and
  // the Chrome trace to profile_trace(), written atomically. {0, 0}: no profile.
  MINIDL_ARG(StepRange, profile_steps);
  MINIDL_ARG(std::filesystem::path, profile_trace) = "trace.json";
  // Where training checkpoints go (see train/training_checkpoint.h). Empty: none.
  MINIDL_ARG(std::filesystem::path, checkpoint_dir);
  // A checkpoint after every this many epochs; there is always one at the end of the run.
  MINIDL_ARG(int64_t, checkpoint_every) = 1;
  // How many of the newest checkpoints are kept in checkpoint_dir.
  MINIDL_ARG(int64_t, keep_checkpoints) = 3;
  // "" starts afresh, "auto" continues from the newest checkpoint in checkpoint_dir (afresh if
  // there is none), anything else is the path of a checkpoint file to continue from.
  MINIDL_ARG(std::string, resume);
  // A run that starts afresh (resume "") in a checkpoint_dir that holds checkpoints already
  // removes them first; without it, such a run is refused (Note [One run per checkpoint folder]
  // in train/trainer.h).
  MINIDL_ARG(bool, overwrite) = false;
  // The settings that define this run, recorded in every checkpoint; resuming from a checkpoint
  // whose recorded settings differ is refused, naming each difference (train/run_settings.h).
  // Leave out what may change on resume (epochs, paths, logging, the device). Empty: none.
  MINIDL_ARG(RunSettings, run_settings);
  // Written into checkpoints; resuming from a checkpoint of another model or dataset is refused.
  MINIDL_ARG(std::string, model_name) = "model";
  MINIDL_ARG(std::string, dataset_name) = "dataset";
  // Catch SIGINT and SIGTERM: finish the step, write a checkpoint, and return with
  // TrainingResult::stop_signal set. A second signal ends the process at once.
  MINIDL_ARG(bool, handle_signals) = true;
  // What the model is trained and evaluated on (train/objective.h, Note [Objectives] in
  // train/trainer.h). Null (the default): Classification(label_smoothing()).
  MINIDL_ARG(std::shared_ptr<const Objective>, objective);
  // Classification's label smoothing when objective() is null; must be 0 when it is set (an
  // objective carries its own).
  MINIDL_ARG(double, label_smoothing) = 0;
  // An evaluation reads at most this many batches of the test loader, from its start (nanoGPT's
  // eval_iters). 0: all of them.
  MINIDL_ARG(int64_t, eval_batches) = 0;
  // kFloat32, or mixed precision: kBFloat16, or kFloat16 with dynamic loss scaling (the trainer's
  // amp::GradScaler, saved in checkpoints). Parameters and optimizer state stay float32.
  MINIDL_ARG(DType, precision) = kFloat32;
  // The GradScaler's settings for float16 (init_scale, growth_interval, ...); its enabled() is
  // ignored: the scaler is on for float16 and off otherwise.
  MINIDL_ARG(amp::GradScalerOptions, grad_scaler);
  // Capture the training step in a CUDA graph and replay it (train/train_step_graph.h),
  // where that applies: a model on a GPU, one process (no data parallelism), and no nn::Dropout
  // with p > 0 (its random mask cannot be replayed). A model that calls the functional dropout
  // itself needs cuda_graph(false). Replays compute what eager steps compute; they only skip
  // the host's work.
  MINIDL_ARG(bool, cuda_graph) = true;
  // Gradient accumulation: each optimizer step takes this many consecutive batches of the
  // loader (micro-batches), each one's loss divided by their number, so that with a mean loss
  // the step is the one a batch this many times larger would take (PyTorch's recipe). An epoch's
  // last group may be shorter; it steps all the same, its losses divided by its own size.
  // Steps, max_steps, log_every and a scheduler count optimizer steps. Saved in checkpoints: a
  // run resumes only with the value it was trained with. Not with the CUDA-graph step
  // (cuda_graph(false) is needed on a GPU; see Trainer's constructor).
  MINIDL_ARG(int64_t, accumulate_steps) = 1;
  // Clip the gradients' total 2-norm to this before each optimizer step
  // (nn::utils::clip_grad_norm_ over the model's parameters, after the GradScaler's unscale_
  // in float16). 0: no clipping. Saved in checkpoints, as accumulate_steps.
  MINIDL_ARG(double, clip_grad_norm) = 0;
};

}  // namespace minidl::train
