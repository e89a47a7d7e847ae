#pragma once
// The training loop of the example trainers, for a user's own program too: epochs of SGD steps
// on an objective (a classifier's cross-entropy on logits by default, or a GPT's next-token
// loss: Note [Objectives]), an evaluation after each epoch, progress, metrics as JSON lines,
// checkpoints with exact resume, and a clean stop on SIGINT/SIGTERM.
//
//   models::LeNet model;
//   optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
//   data::DataLoader train(train_set, data::DataLoaderOptions(128).shuffle(true)...);
//   data::DataLoader test(test_set, data::DataLoaderOptions(1000)...);
//   train::Trainer trainer(model, optimizer, train, test,
//                          train::TrainerOptions().epochs(10).checkpoint_dir("runs"));
//   train::TrainingResult result = trainer.fit();
//
// The model, the loaders and the optimizer are the caller's, already on their device; for the
// default Classification objective, batches must arrive as float images (normalise them in the
// loader). One step is: zero the gradients,
// forward and loss (under autocast with a 16-bit precision()), backward (of the scaled loss for
// float16), optimizer step (skipped by the GradScaler when a gradient overflowed), scheduler
// step. With accumulate_steps(N) a step takes N batches, forward and backward on each (its loss
// divided by N; under data parallelism all but the last backward under no_sync()), then one
// optimizer step; with clip_grad_norm(max) the gradients are unscaled (float16) and clipped
// (nn::utils::clip_grad_norm_) before it. Nothing in it reads a value back to
// the host: the running loss sums on the device and is read only when a progress line is due
// and at the end of the epoch. On a GPU, full batches replay the step from a CUDA graph
// (TrainerOptions::cuda_graph, train/train_step_graph.h).
//
// Data parallel: after distributed::init() under mpirun with several ranks, the trainer wraps
// the model in DistributedDataParallel (rank 0's weights everywhere, gradients averaged in
// backward); the caller gives each rank its shard of the training set (a DistributedSampler),
// so the global batch is the loader's batch times the world size. Every rank evaluates the
// whole test set after the batch-norm buffers are synchronised; the training loss is summed
// over ranks; rank 0 alone prints, writes the metrics and writes checkpoints (which every rank
// must be able to read to resume: a shared filesystem on several hosts). Signals are not
// caught under mpirun: mpirun ends every rank when one is interrupted, so such a run resumes
// from its last epoch checkpoint.
//
// Note [Exact resume]: a checkpoint holds the model, the optimizer, the scheduler, the default
// generator, the epoch and the next batch in it, the step count and the epoch's running loss
// sum. The loaders' order and augmentation depend only on their seeds and the epoch, and a
// loader can start mid-epoch (DataLoader::set_start_batch), so a run resumed from any
// checkpoint takes the same steps on the same batches as one that never stopped: on the CPU its
// weights and metrics come out bit for bit the same (tests/train/trainer_test.cpp). Checkpoints
// fall between optimizer steps, never inside a group of accumulated batches; accumulate_steps
// and clip_grad_norm are saved and must be the same to resume, as the precision
// (tests/train/trainer_accumulation_test.cpp).
//
// Note [Objectives]: the loop is one loop for every model; what differs between a classifier
// and a GPT is a small train::Objective (train/objective.h, TrainerOptions::objective) that cuts
// a loader batch into the model's input and target (inside the step, so the CUDA-graph step
// captures it too: the graph's static inputs stay the loader's images and labels), gives the
// training loss, and adds an evaluation's loss sum and correct predictions. Everything else
// (accumulation, clipping, autocast, the GradScaler, checkpoints and exact resume, data
// parallelism) sees only a loss and is the same for both. Classification is the default and
// computes exactly what the loop computed before objectives existed. NextToken trains a GPT on
// data::TokenWindowDataset windows; its evaluation is the mean loss and next-token accuracy over
// the target tokens, and throughput counts tokens. A GPT recipe evaluates every N steps on a
// few batches (nanoGPT: every 250 steps, 20 batches): rather than a second evaluation schedule
// inside the loop, its "epochs" are N steps long (the random-window dataset's epoch_size is N
// batches' worth of windows; tools/trainers/train_gpt.cpp), so the per-epoch evaluation,
// metrics line and checkpoint fall every N steps, and TrainerOptions::eval_batches bounds the
// evaluation. The training loss is still averaged per sample (each window holds the same number
// of tokens, so per sample and per token are the same mean).
//
// Note [One run per checkpoint folder]: a run that starts afresh in a checkpoint folder that
// holds checkpoints already is refused (TrainerOptions::overwrite removes them first), so that
// two runs never overwrite, prune or resume each other's checkpoints; and every checkpoint
// records the settings that define its run (TrainerOptions::run_settings), so that resuming with
// other ones (another learning rate, seed, batch size, optimizer) is refused naming each
// difference instead of silently continuing as a mix of two runs. Checkpoints carry no random
// run id: two runs with the same settings write the same bytes, which is how a resumed run is
// checked against a straight one.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/data/dataloader.h"
#include "minidl/distributed/distributed_data_parallel.h"
#include "minidl/nn/any_module.h"
#include "minidl/optim/grad_scaler.h"
#include "minidl/optim/lr_scheduler.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/reduce_lr_on_plateau.h"
#include "minidl/train/metrics_log.h"
#include "minidl/train/objective.h"
#include "minidl/train/train_step_graph.h"
#include "minidl/train/trainer_options.h"

namespace minidl::train {

// Averages over the objective's scored units: samples for a classifier, target tokens for a GPT.
struct Evaluation {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // fraction of units whose largest logit is the label (the next token)
  int64_t samples = 0;
  int64_t units = 0;  // samples, or tokens
};

struct TrainingResult {
  int64_t epochs = 0;                 // epochs completed, counting those before a resume
  int64_t steps = 0;                  // optimizer steps taken, likewise
  Evaluation test;                    // the last evaluation
  int64_t images_trained = 0;         // by this run, on every rank; 0 when it had nothing to train
  double train_images_per_sec = 0;    // over this run's training time (evaluation excluded)
  double wall_seconds = 0;            // this run's time in fit()
  std::vector<EpochMetrics> history;  // the epochs this run finished
  std::optional<int> stop_signal;     // the signal that stopped the run early
  std::filesystem::path last_checkpoint;  // the last one written; empty if none
  int64_t graph_replays = 0;              // steps of this run replayed from a CUDA graph
  // NextToken: target tokens trained by this run on every rank, and per second of training;
  // 0 for a classifier.
  int64_t tokens_trained = 0;
  double train_tokens_per_sec = 0;
};

class Trainer {
 public:
  // The optimizer and the loaders must outlive the trainer.
  Trainer(nn::AnyModule model, optim::Optimizer& optimizer, data::DataLoader& train_loader,
          data::DataLoader& test_loader, TrainerOptions options);

  // Stepped after every optimizer step, so its "epochs" are steps (as OneCycleLR's are);
  // saved in and restored from checkpoints. May be null (the default). One scheduler at a time:
  // this replaces a ReduceLROnPlateau set before.
  void set_scheduler(optim::LRScheduler* scheduler) {
    scheduler_ = scheduler;
    plateau_scheduler_ = nullptr;
  }
  // Stepped once after each complete epoch on the evaluation, as PyTorch recipes step it on a
  // validation metric: the test loss in mode kMin, the test accuracy in mode kMax, averaged over
  // the ranks so that every rank takes the same decision. Saved in and restored from
  // checkpoints; replaces a per-step scheduler set before.
  void set_scheduler(optim::ReduceLROnPlateau* scheduler) {
    plateau_scheduler_ = scheduler;
    scheduler_ = nullptr;
  }

  // Trains from epoch 0, or from the checkpoint options().resume() names, to options().epochs()
  // (or max_steps), evaluating after each epoch. Before the first step it checks that the
  // checkpoint directory and the metrics file can be written, that a fresh run's checkpoint
  // directory holds no checkpoint (Note [One run per checkpoint folder]), and removes the
  // temporaries of checkpoint writes that a killed run left (remove_stale_temporaries).
  //
  // Resuming (Note [Resuming changes nothing] in trainer.cpp): "auto" takes the newest checkpoint
  // that reads, skipping damaged ones with a warning; the checkpoint's schedule must be the one
  // this run's scheduler was built with, or fit() throws naming both; a checkpoint that has
  // trained every epoch (or max_steps) asked for is evaluated, not trained further, and the
  // result says so (images_trained 0).
  //
  // A diverged run stops: fit() throws minidl::Error when the running training loss becomes inf
  // or NaN (checked every log_every() steps and at the end of each epoch, a read of one number)
  // or the test loss after an epoch does, naming the step and the last finite loss, and writes
  // no checkpoint of the diverged weights. A float16 step that the GradScaler skips has a finite
  // loss, so loss scaling does not trip it.
  TrainingResult fit();
  // Mean loss and accuracy of the model on the test loader (its first eval_batches batches, when
  // set), in eval mode without gradients.
  Evaluation evaluate();

  const TrainerOptions& options() const { return options_; }
  int world_size() const { return world_size_; }

 private:
  using Clock = std::chrono::steady_clock;

  // The checkpoint to resume from, if any.
  std::optional<std::filesystem::path> resume_path() const;
  std::optional<std::filesystem::path> newest_valid_checkpoint() const;
  // Checks the checkpoint directory and the metrics path, and removes stale temporaries.
  void prepare_outputs() const;
  // fit() in epoch-sized parts. FitRun holds what lives from the first epoch to the last (the
  // metrics log, the signal guard, the captured step, the progress line, the result so far).
  struct FitRun;
  struct EpochPass {
    Clock::time_point start;
    int64_t images = 0;  // trained by this rank
    int64_t units = 0;   // the objective's scored units in them
    double seconds = 0;
  };
  // Trains from batch_ to the end of epoch_, or until a stop signal or max_steps.
  EpochPass train_pass(FitRun& run);
  // After a pass: evaluates, logs the epoch's metrics, moves to the next epoch when this one is
  // complete and saves the checkpoints due. False when a stop signal ends the run.
  bool end_epoch(FitRun& run, const EpochPass& pass);
  // TensorBoard's scalars of step_ (TrainerOptions::tensorboard_dir), from the running loss.
  void log_step(FitRun& run, double running_loss);
  // TrainerOptions::profile_steps: starts the profile before the first step of its range, and
  // ends it (table to the log, trace to its file) after the last, or when `force` (the run ends).
  void start_profile_if_due(FitRun& run) const;
  void end_profile_if_due(FitRun& run, bool force) const;
  // TensorBoard's scalars of an evaluation, and its histograms when they are due.
  void log_evaluation(FitRun& run, const EpochMetrics& metrics);
  TrainingResult summary(FitRun& run) const;
  // The result of resuming a run that has nothing left to train: its evaluation.
  TrainingResult finished_result(const std::filesystem::path& checkpoint,
                                 Clock::time_point run_start);
  void restore(const std::filesystem::path& path);
  std::filesystem::path save_checkpoint();
  // Where a batch sits in its optimizer step's group of accumulate_steps micro-batches.
  struct MicroBatch {
    bool first = true;       // the gradients are zeroed before it
    bool last = true;        // the optimizer steps after it
    int64_t group_size = 1;  // micro-batches in its group; its loss is divided by this
  };
  MicroBatch micro_batch(int64_t batch_index, int64_t pass_start) const;
  // One micro-batch, and the optimizer step after the last of a group; through `graph`
  // (replayed or eager, as it decides) when there is one (whole steps only).
  void train_step(const data::Batch& batch, const MicroBatch& micro, TrainStepGraph* graph);
  // The micro-batch's work on the current stream, for any batch size: zero_grad before the
  // first of a group, the objective's cut of the batch, forward, backward, and after the last
  // the optimizer step. A whole step (MicroBatch{}) is what a graph captures.
  void run_step(const Tensor& images, const Tensor& labels, const MicroBatch& micro);
  // Unscale (float16) and clip when asked, the optimizer step and the scaler's update.
  void optimizer_step();
  // Whether fit() captures the step in a CUDA graph (TrainerOptions::cuda_graph).
  bool cuda_graph_applies() const;
  void print_epoch_line(const EpochMetrics& metrics, int64_t batches_done) const;
  bool reached_max_steps() const;
  // Every epoch asked for is done, or max_steps is reached.
  bool finished() const;
  // The epoch's training loss sum and sample count over every rank (collective); throws when the
  // sum is inf or NaN.
  std::pair<double, int64_t> check_finite_loss();
  bool is_main_rank() const { return rank_ == 0; }
  Tensor forward(const Tensor& images);
  // The epoch's training loss sum and sample count over every rank.
  std::pair<double, int64_t> global_train_loss() const;

  nn::AnyModule model_;
  std::shared_ptr<const Objective> objective_;  // never null
  optim::Optimizer& optimizer_;
  // The scheduler set, if any: one of these two is null.
  optim::LRScheduler* scheduler_ = nullptr;
  optim::ReduceLROnPlateau* plateau_scheduler_ = nullptr;
  // Whichever is set, for checkpoints; null when none is.
  optim::CheckpointableScheduler* checkpointed_scheduler() const;
  // Steps the plateau scheduler on the evaluation just made.
  void step_plateau_scheduler(const Evaluation& evaluation);
  data::DataLoader& train_loader_;
  data::DataLoader& test_loader_;
  TrainerOptions options_;
  int rank_ = 0;
  int world_size_ = 1;
  std::optional<distributed::DistributedDataParallel> ddp_;  // world size > 1
  amp::GradScaler scaler_;                                   // enabled for float16 only

  // Where the run is: the epoch in progress, its next batch, the steps taken, and the epoch's
  // running loss sum (on the model's device) over train_samples_ samples.
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  int64_t step_ = 0;
  Tensor train_loss_sum_;
  int64_t train_samples_ = 0;
  double last_step_lr_ = 0;  // the lr of the last step taken (param group 0)
  Tensor last_grad_norm_;    // clip_grad_norm_'s total norm at the last step, on the device
  // The last running loss check_finite_loss() found finite (NaN before the first), and at which
  // step (where the run started, before the first).
  double last_finite_loss_ = std::numeric_limits<double>::quiet_NaN();
  int64_t last_finite_step_ = 0;
};

}  // namespace minidl::train
