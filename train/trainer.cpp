#include "minidl/train/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"
#include "minidl/core/generator.h"
#include "minidl/core/logging.h"
#include "minidl/core/profile.h"
#include "minidl/core/profiler.h"
#include "minidl/distributed/init.h"
#include "minidl/distributed/zero_redundancy_optimizer.h"
#include "minidl/nn/utils/clip_grad.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "minidl/optim/scalar_map.h"
#include "minidl/train/output_paths.h"
#include "minidl/train/progress_line.h"
#include "minidl/train/stop_signal.h"
#include "minidl/train/tensorboard_writer.h"
#include "minidl/train/training_checkpoint.h"

namespace minidl::train {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Device device_of(const nn::AnyModule& model) {
  const std::vector<Tensor> parameters = model.ptr()->parameters();
  return parameters.empty() ? Device(kCPU) : parameters.front().device();
}

// "fp32", "fp16" or "bf16", as the trainers' --precision says it.
std::string precision_name(DType precision) {
  return precision == kFloat16 ? "fp16" : precision == kBFloat16 ? "bf16" : "fp32";
}

// Autocast to `precision` for the scope, unless it is float32.
class MixedPrecisionScope {
 public:
  explicit MixedPrecisionScope(DType precision) {
    if (precision != kFloat32) guard_.emplace(precision);
  }

 private:
  std::optional<amp::AutocastGuard> guard_;
};

// The objective the options give, or the default: Classification with their label smoothing.
std::shared_ptr<const Objective> objective_of(const TrainerOptions& options) {
  if (options.objective() == nullptr)
    return std::make_shared<Classification>(options.label_smoothing());
  MINIDL_CHECK(options.label_smoothing() == 0, "Trainer: expected label_smoothing 0 with the ",
               options.objective()->name(),
               " objective (label smoothing is Classification's: give it "
               "Classification(label_smoothing) instead), got ",
               options.label_smoothing());
  return options.objective();
}

// What a path that is not a regular file is, for an error message.
const char* file_type_name(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a named pipe (FIFO)";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    default: return "something other than a regular file";
  }
}

}  // namespace

Trainer::Trainer(nn::AnyModule model, optim::Optimizer& optimizer, data::DataLoader& train_loader,
                 data::DataLoader& test_loader, TrainerOptions options)
    : model_(std::move(model)),
      objective_(objective_of(options)),
      optimizer_(optimizer),
      train_loader_(train_loader),
      test_loader_(test_loader),
      options_(std::move(options)),
      scaler_(amp::GradScalerOptions(options_.grad_scaler())
                  .enabled(options_.precision() == kFloat16)) {
  const DType precision = options_.precision();
  MINIDL_CHECK(precision == kFloat32 || precision == kFloat16 || precision == kBFloat16,
               "Trainer: expected the precision float32, float16 or bfloat16, got ", precision);
  MINIDL_CHECK(options_.epochs() >= 1, "Trainer: expected at least 1 epoch, got ",
               options_.epochs());
  MINIDL_CHECK(options_.max_steps() >= 0, "Trainer: expected max_steps >= 0, got ",
               options_.max_steps());
  MINIDL_CHECK(options_.checkpoint_every() >= 1, "Trainer: expected checkpoint_every >= 1, got ",
               options_.checkpoint_every());
  MINIDL_CHECK(options_.keep_checkpoints() >= 1, "Trainer: expected keep_checkpoints >= 1, got ",
               options_.keep_checkpoints());
  MINIDL_CHECK(options_.resume() != "auto" || !options_.checkpoint_dir().empty(),
               "Trainer: resume \"auto\" needs a checkpoint directory");
  MINIDL_CHECK(options_.eval_batches() >= 0,
               "Trainer: expected eval_batches >= 0 (0: the whole test loader), got ",
               options_.eval_batches());
  MINIDL_CHECK(options_.accumulate_steps() >= 1, "Trainer: expected accumulate_steps >= 1, got ",
               options_.accumulate_steps());
  // Negated, so NaN fails too.
  MINIDL_CHECK(options_.profile_steps().first >= 0 &&
                   options_.profile_steps().second >= options_.profile_steps().first,
               "Trainer: expected profile_steps {first, last} with 0 <= first <= last, got {",
               options_.profile_steps().first, ", ", options_.profile_steps().second, "}");
  MINIDL_CHECK(options_.tensorboard_histogram_every() >= 0,
               "Trainer: expected tensorboard_histogram_every >= 0 (0: no histograms), got ",
               options_.tensorboard_histogram_every());
  MINIDL_CHECK(options_.clip_grad_norm() >= 0 && std::isfinite(options_.clip_grad_norm()),
               "Trainer: expected a finite clip_grad_norm >= 0 (0: no clipping), got ",
               options_.clip_grad_norm());
  if (distributed::is_initialized() && distributed::world_size() > 1) {
    rank_ = distributed::rank();
    world_size_ = distributed::world_size();
  }
  // A captured step (train/train_step_graph.h) is one whole optimizer step on one batch; the
  // micro-batches of an accumulated step would each need a graph of their own, with gradients
  // that outlive them, which TrainStepGraph does not do. Refused rather than silently slower.
  MINIDL_CHECK(options_.accumulate_steps() == 1 || !options_.cuda_graph() ||
                   !device_of(model_).is_cuda() || world_size_ > 1,
               "Trainer: accumulate_steps(", options_.accumulate_steps(),
               ") cannot be combined with the CUDA-graph step (TrainerOptions::cuda_graph, on by ",
               "default), which captures one whole optimizer step on one batch; expected ",
               "cuda_graph(false) with gradient accumulation on a GPU");
  if (world_size_ > 1) {
    ddp_.emplace(model_);  // collective: rank 0's weights on every rank
    // ZeRO-1's reduce-scatter form steps slices of DDP's buckets, which DDP reduce-scatters
    // from now on (nothing to do in the whole-parameter form).
    if (auto* sharded = dynamic_cast<distributed::ZeroRedundancyOptimizer*>(&optimizer_))
      sharded->attach(*ddp_);
  }
}

Tensor Trainer::forward(const Tensor& images) {
  return ddp_ ? ddp_->forward(images) : model_.forward(images);
}

std::pair<double, int64_t> Trainer::global_train_loss() const {
  const double loss_sum = train_loss_sum_.item<double>();
  if (world_size_ == 1) return {loss_sum, train_samples_};
  Tensor sums = tensor({loss_sum, static_cast<double>(train_samples_)}, kFloat64);
  distributed::default_process_group(Device(kCPU))->all_reduce(sums);
  return {sums.data_ptr<double>()[0], static_cast<int64_t>(sums.data_ptr<double>()[1])};
}

std::optional<fs::path> Trainer::resume_path() const {
  if (options_.resume().empty()) return std::nullopt;
  if (options_.resume() == "auto") return newest_valid_checkpoint();
  const fs::path path(options_.resume());
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  MINIDL_CHECK(fs::exists(status), "checkpoint ", path.string(), ": no such file");
  MINIDL_CHECK(fs::is_regular_file(status), "checkpoint ", path.string(),
               ": expected a checkpoint file, found ", file_type_name(status.type()),
               fs::is_directory(status) ? " (to resume from the newest checkpoint in a folder, "
                                          "make it the checkpoint folder and resume \"auto\")"
                                        : "");
  return path;
}

std::optional<fs::path> Trainer::newest_valid_checkpoint() const {
  const fs::path& directory = options_.checkpoint_dir();
  const std::vector<fs::path> paths = list_checkpoints(directory);
  if (paths.empty()) {
    if (is_main_rank())
      logger().info("resume auto: no checkpoint in {}; starting afresh", directory.string());
    return std::nullopt;
  }
  // A run killed mid-write leaves no damaged checkpoint (they are renamed into place complete),
  // but a disk can fill or a file be copied in half: fall back to the newest one that reads.
  std::string skipped;
  for (auto path = paths.rbegin(); path != paths.rend(); ++path) {
    try {
      check_training_checkpoint_file(*path);
      return *path;
    } catch (const Error& error) {
      if (is_main_rank())
        logger().warn("resume auto: skipping {}, which cannot be used: {}", path->string(),
                      error.what());
      skipped += std::string("\n  ") + error.what();
    }
  }
  throw Error("resume auto: none of the " + std::to_string(paths.size()) + " checkpoints in " +
              directory.string() + " can be used:" + skipped);
}

void Trainer::restore(const fs::path& path) {
  optim::CheckpointableScheduler* scheduler = checkpointed_scheduler();
  const std::optional<optim::ScalarMap> planned_schedule =
      scheduler != nullptr ? std::optional(scheduler->schedule()) : std::nullopt;
  TrainingCheckpoint checkpoint =
      load_training_checkpoint(path, *model_.ptr(), optimizer_, scheduler, options_.model_name(),
                               options_.dataset_name(), options_.run_settings());
  const std::string precision = precision_name(options_.precision());
  MINIDL_CHECK(checkpoint.precision == precision, "checkpoint ", path.string(), " was trained in ",
               checkpoint.precision, " precision, but this run uses ", precision,
               "; resume with the same precision");
  // Another grouping of batches or another clip would take other steps from here on.
  MINIDL_CHECK(checkpoint.accumulate_steps == options_.accumulate_steps(), "checkpoint ",
               path.string(), " was trained with accumulate_steps ", checkpoint.accumulate_steps,
               ", but this run uses ", options_.accumulate_steps(),
               "; resume with the same accumulate_steps");
  MINIDL_CHECK(checkpoint.clip_grad_norm == options_.clip_grad_norm(), "checkpoint ", path.string(),
               " was trained with clip_grad_norm ", checkpoint.clip_grad_norm,
               ", but this run uses ", options_.clip_grad_norm(),
               " (0: no clipping); resume with the same clip_grad_norm");
  // Note [Resuming changes nothing]: a resumed run takes the steps a straight run would have.
  // The checkpoint's schedule continues; one that is not the schedule this run was given (other
  // epochs, steps per epoch or learning rate) would silently become another run, so it is refused.
  if (planned_schedule && scheduler->schedule() != *planned_schedule)
    throw Error("checkpoint " + path.string() + " was trained on the schedule " +
                optim::to_json(scheduler->schedule()) + ", but this run's is " +
                optim::to_json(*planned_schedule) +
                "; resume with the settings of the run that wrote it (epochs, batch size, "
                "learning rate and schedule), or start a new run");
  if (scaler_.is_enabled()) {
    MINIDL_CHECK(checkpoint.grad_scaler.has_value(), "checkpoint ", path.string(),
                 ": expected the GradScaler's state of a float16 run, found none");
    scaler_.load_state_dict(*checkpoint.grad_scaler);
  }
  const int64_t saved_world_size = checkpoint.world_size;
  // A checkpoint taken mid-epoch on another number of ranks: the ranks' shards interleave
  // one shuffled order, so the same number of samples in is about the same place in it.
  if (saved_world_size != world_size_ && checkpoint.batch > 0) {
    const int64_t batch = checkpoint.batch * saved_world_size / world_size_;
    if (is_main_rank())
      logger().warn(
          "checkpoint {} stopped mid-epoch on {} ranks; on {} ranks the epoch "
          "continues at batch {} (about the same samples in, not exactly)",
          path.string(), saved_world_size, world_size_, batch);
    checkpoint.batch = batch;
  }
  MINIDL_CHECK(checkpoint.batch <= train_loader_.num_batches(), "checkpoint ", path.string(),
               " stopped at batch ", checkpoint.batch, " of its epoch, but this run's epochs have ",
               train_loader_.num_batches(), " batches (was it saved with another batch size?)");
  // Its counts agree with each other and with this run, or the file is not what it says.
  MINIDL_CHECK(checkpoint.epoch <= options_.epochs(), "checkpoint ", path.string(), " says epoch ",
               checkpoint.epoch, " is done, but this run has ", options_.epochs(), " epochs");
  if (saved_world_size == world_size_) {
    const int64_t steps_per_epoch =
        (train_loader_.num_batches() + options_.accumulate_steps() - 1) /
        options_.accumulate_steps();
    const int64_t expected_step =
        checkpoint.epoch * steps_per_epoch + checkpoint.batch / options_.accumulate_steps();
    MINIDL_CHECK(checkpoint.step == expected_step, "checkpoint ", path.string(), " holds step ",
                 checkpoint.step, ", but its epoch ", checkpoint.epoch, " and batch ",
                 checkpoint.batch, " at ", steps_per_epoch, " steps per epoch make step ",
                 expected_step,
                 " (was it saved with another batch size, or its metadata changed?)");
  }
  epoch_ = checkpoint.epoch;
  batch_ = checkpoint.batch;
  step_ = checkpoint.step;
  train_loss_sum_ = checkpoint.train_loss_sum.reshape({}).to(device_of(model_));
  train_samples_ = checkpoint.train_samples;
  if (!is_main_rank()) {  // the saved sum is over every rank: rank 0 carries it on
    train_loss_sum_.zero_();
    train_samples_ = 0;
  }
  default_generator().set_state(checkpoint.generator);
}

fs::path Trainer::save_checkpoint() {
  if (ddp_) ddp_->sync_buffers();  // collective, as is the loss sum below
  const auto [loss_sum, samples] = check_finite_loss();
  const fs::path path = checkpoint_path(options_.checkpoint_dir(), step_);
  // A ZeRO-1 optimizer holds its state in shards: gather the whole state on rank 0, which
  // saves it (collective).
  if (auto* sharded = dynamic_cast<distributed::ZeroRedundancyOptimizer*>(&optimizer_))
    sharded->consolidate_state_dict(0);
  if (!is_main_rank()) return path;
  TrainingCheckpoint checkpoint;
  checkpoint.model = options_.model_name();
  checkpoint.dataset = options_.dataset_name();
  checkpoint.epoch = epoch_;
  checkpoint.batch = batch_;
  checkpoint.step = step_;
  checkpoint.generator = default_generator().state();
  // One process saves its sum tensor itself, so that a resumed run continues bit for bit.
  checkpoint.train_loss_sum =
      world_size_ == 1 ? train_loss_sum_ : scalar_tensor(loss_sum, kFloat32);
  checkpoint.train_samples = samples;
  checkpoint.world_size = world_size_;
  checkpoint.precision = precision_name(options_.precision());
  if (scaler_.is_enabled()) checkpoint.grad_scaler = scaler_.state_dict();
  checkpoint.accumulate_steps = options_.accumulate_steps();
  checkpoint.clip_grad_norm = options_.clip_grad_norm();
  checkpoint.run_settings = options_.run_settings();
  fs::create_directories(options_.checkpoint_dir());
  save_training_checkpoint(path, *model_.ptr(), optimizer_, checkpointed_scheduler(), checkpoint);
  prune_checkpoints(options_.checkpoint_dir(), options_.keep_checkpoints());
  logger().info("saved checkpoint {}", path.string());
  return path;
}

Trainer::MicroBatch Trainer::micro_batch(int64_t batch_index, int64_t pass_start) const {
  // Groups of accumulate_steps batches from the start of the epoch, the last one shorter. A
  // pass starts between groups (checkpoints are taken there), unless a checkpoint of another
  // world size moved its start; then its first group is cut short there.
  const int64_t steps = options_.accumulate_steps();
  const int64_t group_begin = std::max(batch_index / steps * steps, pass_start);
  const int64_t group_end =
      std::min(batch_index / steps * steps + steps, train_loader_.num_batches());
  return {.first = batch_index == group_begin,
          .last = batch_index + 1 >= group_end,
          .group_size = group_end - group_begin};
}

void Trainer::train_step(const data::Batch& batch, const MicroBatch& micro, TrainStepGraph* graph) {
  const Tensor& images = batch.images;
  if (graph != nullptr) {
    MINIDL_INTERNAL_ASSERT(micro.first && micro.last,
                           "a CUDA-graph step with gradient accumulation (the constructor refuses "
                           "it)");
    graph->run(images, batch.labels);
  } else {
    run_step(images, batch.labels, micro);
  }
  train_samples_ += batch.size();
  if (!micro.last) return;
  last_step_lr_ = optimizer_.param_groups().front().options().get_lr();
  if (scheduler_ != nullptr) scheduler_->step();  // on the host: a replay reads the new lr
  ++step_;
}

void Trainer::run_step(const Tensor& images, const Tensor& labels, const MicroBatch& micro) {
  if (micro.first) optimizer_.zero_grad();
  Tensor loss;
  {
    const ProfileScope phase("forward");  // a range in profiles and in Nsight Systems
    const ObjectiveBatch cut = objective_->prepare(images, labels);
    MixedPrecisionScope mixed_precision(options_.precision());
    loss = objective_->training_loss(forward(cut.input), cut.target);  // float32 under autocast too
  }
  {
    const ProfileScope phase("backward");
    // Each micro-batch's share of the group's mean, as PyTorch's recipe (loss / N).
    const Tensor share =
        micro.group_size > 1 ? div(loss, static_cast<double>(micro.group_size)) : loss;
    // The scaler passes everything through unless float16.
    if (ddp_ && !micro.last) {
      // Gradients accumulate locally; the group's last backward averages their sum over ranks.
      const auto local_only = ddp_->no_sync();
      scaler_.scale(share).backward();
    } else {
      scaler_.scale(share).backward();
    }
  }
  if (micro.last) optimizer_step();
  train_loss_sum_.add_(loss.detach(), static_cast<double>(labels.size(0)));
}

void Trainer::optimizer_step() {
  if (options_.clip_grad_norm() > 0) {
    scaler_.unscale_(optimizer_);  // clip the true gradients; then step() does not unscale again
    // The norm stays on the device: nothing here waits for it. ZeRO-1's reduce-scatter form
    // holds the averaged gradients in its slices, whose global norm it computes.
    if (auto* sharded = dynamic_cast<distributed::ZeroRedundancyOptimizer*>(&optimizer_))
      last_grad_norm_ = sharded->clip_grad_norm_(options_.clip_grad_norm());
    else
      last_grad_norm_ =
          nn::utils::clip_grad_norm_(model_.ptr()->parameters(), options_.clip_grad_norm());
  }
  scaler_.step(optimizer_);
  scaler_.update();
}

bool Trainer::cuda_graph_applies() const {
  const Device device = device_of(model_);
  if (!options_.cuda_graph() || !device.is_cuda() || world_size_ > 1) return false;
  // ZeRO-1's step copies the groups' options (a schedule's lr) into its wrapped optimizer on the
  // host, which a replay would skip.
  if (dynamic_cast<const distributed::ZeroRedundancyOptimizer*>(&optimizer_) != nullptr)
    return false;
  // Modules that draw random numbers each step (dropout) cannot be replayed (nn/module.h).
  for (const auto& item : model_.ptr()->named_modules()) {
    if (!item.value()->is_cuda_graph_safe()) {
      if (is_main_rank())
        logger().info(
            "the model's module '{}' cannot be captured in a CUDA graph (it draws "
            "random numbers each step): training steps run eagerly",
            item.key().empty() ? "(the model)" : item.key());
      return false;
    }
  }
  return true;
}

bool Trainer::reached_max_steps() const {
  return options_.max_steps() > 0 && step_ >= options_.max_steps();
}

bool Trainer::finished() const { return epoch_ >= options_.epochs() || reached_max_steps(); }

std::pair<double, int64_t> Trainer::check_finite_loss() {
  const auto [loss_sum, samples] = global_train_loss();
  if (std::isfinite(loss_sum)) {
    if (samples > 0) {
      last_finite_loss_ = loss_sum / static_cast<double>(samples);
      last_finite_step_ = step_;
    }
    return {loss_sum, samples};
  }
  // Every rank sees the same sum, so every rank throws here.
  const std::string since =
      std::isnan(last_finite_loss_)
          ? fmt::format("between step {} (where this run started) and step {}", last_finite_step_,
                        step_)
          : fmt::format("between step {} (running loss {:.4f}, the last finite one) and step {}",
                        last_finite_step_, last_finite_loss_, step_);
  throw Error(
      fmt::format("Trainer: the training loss became {} {} (epoch {}): the model has "
                  "diverged. Stopping without writing a checkpoint of it (the newest one, "
                  "if any, is from before); try a lower learning rate",
                  std::isnan(loss_sum) ? "nan" : "inf", since, epoch_ + 1));
}

Evaluation Trainer::evaluate() {
  if (ddp_) ddp_->sync_buffers();  // every rank evaluates rank 0's model
  NoGradGuard no_grad;
  nn::Module& module = *model_.ptr();
  const bool was_training = module.is_training();
  module.eval();
  const Device device = device_of(model_);
  Tensor loss_sum = zeros({}, device);
  Tensor correct = zeros({}, TensorOptions(kInt64).device(device));
  int64_t samples = 0, units = 0, batches = 0;
  test_loader_.set_epoch(0);
  MixedPrecisionScope mixed_precision(options_.precision());
  for (const data::Batch& batch : test_loader_) {
    const ObjectiveBatch cut = objective_->prepare(batch.images, batch.labels);
    objective_->add_evaluation(model_.forward(cut.input), cut.target, loss_sum, correct);
    samples += batch.size();
    units += cut.target.numel();
    if (++batches == options_.eval_batches()) break;
  }
  module.train(was_training);
  MINIDL_CHECK(units > 0, "Trainer::evaluate: the test loader gave no samples");
  return {loss_sum.item<double>() / static_cast<double>(units),
          static_cast<double>(correct.item<int64_t>()) / static_cast<double>(units), samples,
          units};
}

void Trainer::print_epoch_line(const EpochMetrics& metrics, int64_t batches_done) const {
  if (!is_main_rank()) return;
  // An epoch cut short by max_steps says so: it is not one of the epochs completed.
  const int64_t batches = train_loader_.num_batches();
  const std::string partial = batches_done < batches
                                  ? " (stopped at batch " + std::to_string(batches_done) + "/" +
                                        std::to_string(batches) + ")"
                                  : std::string();
  const bool tokens = metrics.tokens_per_sec > 0;
  std::printf(
      "epoch %lld/%lld%s  train_loss %.4f  test_loss %.4f  test_accuracy %.4f  %.0f %s/s  "
      "%.1f s\n",
      static_cast<long long>(metrics.epoch), static_cast<long long>(options_.epochs()),
      partial.c_str(), metrics.train_loss, metrics.test_loss, metrics.test_accuracy,
      tokens ? metrics.tokens_per_sec : metrics.images_per_sec, tokens ? "tok" : "img",
      metrics.seconds);
  std::fflush(stdout);
}

void Trainer::prepare_outputs() const {
  if (!is_main_rank()) return;  // rank 0 alone writes
  if (!options_.checkpoint_dir().empty()) {
    check_writable_directory(options_.checkpoint_dir(), "TrainerOptions::checkpoint_dir");
    for (const fs::path& stale : remove_stale_temporaries(options_.checkpoint_dir()))
      logger().info("removed {}, left by a run that was killed while writing a checkpoint",
                    stale.string());
    // Note [One run per checkpoint folder].
    if (options_.resume().empty()) {
      const std::vector<fs::path> earlier = list_checkpoints(options_.checkpoint_dir());
      if (!earlier.empty() && options_.overwrite()) {
        for (const fs::path& path : earlier) fs::remove(path);
        logger().info("overwrite: removed the {} checkpoints of an earlier run from {}",
                      earlier.size(), options_.checkpoint_dir().string());
      }
      MINIDL_CHECK(earlier.empty() || options_.overwrite(), "TrainerOptions::checkpoint_dir ",
                   options_.checkpoint_dir().string(), " holds the checkpoints of another run (",
                   earlier.size(), ", the newest ", earlier.back().filename().string(),
                   "); continue it with resume(\"auto\"), start afresh with overwrite(true), "
                   "which removes them, or give another folder");
    }
  }
  if (!options_.metrics_path().empty())
    check_metrics_file(options_.metrics_path(), "TrainerOptions::metrics_path");
  if (!options_.tensorboard_dir().empty())
    check_writable_directory(options_.tensorboard_dir(), "TrainerOptions::tensorboard_dir");
  if (options_.profile_steps().second > options_.profile_steps().first)
    check_writable_file(options_.profile_trace(), "TrainerOptions::profile_trace");
}

TrainingResult Trainer::finished_result(const fs::path& checkpoint, Clock::time_point run_start) {
  if (is_main_rank())
    logger().info(
        "{} has trained {} epochs ({} steps) of the {} epochs{} asked for: nothing left "
        "to train; evaluating it",
        checkpoint.string(), epoch_, step_, options_.epochs(),
        options_.max_steps() > 0 ? " (at most " + std::to_string(options_.max_steps()) + " steps)"
                                 : std::string());
  // The checks training makes, for a run that only evaluates.
  for (const auto& item : model_.ptr()->state_dict()) {
    const Tensor& value = item.value();
    if (!value.is_floating_point()) continue;
    NoGradGuard no_grad;
    // Any inf or nan makes the sum of value * 0 nan.
    MINIDL_CHECK(std::isfinite(sum(mul(value, 0.0)).item<double>()), "checkpoint ",
                 checkpoint.string(), ": its tensor \"", item.key(),
                 "\" holds values that are not finite (inf or nan); nothing to evaluate");
  }
  TrainingResult result;
  result.test = evaluate();
  MINIDL_CHECK(std::isfinite(result.test.loss), "checkpoint ", checkpoint.string(),
               ": the test loss of its model is ", result.test.loss);
  result.epochs = epoch_;
  result.steps = step_;
  result.last_checkpoint = checkpoint;
  result.wall_seconds = seconds_since(run_start);
  return result;
}

// What one fit() keeps from epoch to epoch.
struct Trainer::FitRun {
  FitRun(Trainer& trainer, Clock::time_point start_time)
      : start(start_time),
        progress(trainer.is_main_rank() ? trainer.options_.progress() : ProgressMode::kNone,
                 trainer.options_.log_every()) {
    const TrainerOptions& options = trainer.options_;
    if (!options.metrics_path().empty() && trainer.is_main_rank())
      metrics_log.emplace(options.metrics_path(), "TrainerOptions::metrics_path");
    if (!options.tensorboard_dir().empty() && trainer.is_main_rank())
      tensorboard.emplace(options.tensorboard_dir());
    if (options.handle_signals() && trainer.world_size_ == 1) signals.emplace();
    progress.set_unit(std::string(trainer.objective_->unit()));
    // From here to the end of fit(), the training stream of the graph is current (see
    // train/train_step_graph.h): the loaders deliver to it, evaluation runs on it.
    if (trainer.cuda_graph_applies())
      step_graph.emplace(device_of(trainer.model_).index,
                         trainer.train_loader_.options().batch_size(),
                         [&trainer](const Tensor& images, const Tensor& labels) {
                           trainer.run_step(images, labels, MicroBatch{});
                         });
  }
  std::optional<int> stop_signal() const { return signals ? signals->requested() : std::nullopt; }
  TrainStepGraph* graph() { return step_graph ? &*step_graph : nullptr; }

  Clock::time_point start;
  std::optional<MetricsLog> metrics_log;
  std::optional<TensorBoardWriter> tensorboard;
  std::optional<profiler::Profile> profile;  // while TrainerOptions::profile_steps records
  int64_t evaluations = 0;                   // logged by this run
  std::optional<StopSignalGuard> signals;
  std::optional<TrainStepGraph> step_graph;
  ProgressLine progress;
  TrainingResult result;
  double train_seconds = 0;  // in training passes, over the run
  int64_t images = 0;        // trained by this rank, over the run
  int64_t units = 0;         // the objective's scored units in them
};

TrainingResult Trainer::fit() {
  const Clock::time_point run_start = Clock::now();
  // Found now, not as a nan test loss after the first epoch has trained.
  MINIDL_CHECK(test_loader_.num_batches() > 0,
               "Trainer: the test loader has no batches (its dataset is empty): there would be "
               "nothing to evaluate after each epoch");
  epoch_ = batch_ = step_ = train_samples_ = 0;
  train_loss_sum_ = zeros({}, device_of(model_));
  last_finite_loss_ = std::numeric_limits<double>::quiet_NaN();
  last_finite_step_ = 0;
  prepare_outputs();
  if (const std::optional<fs::path> from = resume_path()) {
    restore(*from);
    last_finite_step_ = step_;
    if (finished()) return finished_result(*from, run_start);
    if (is_main_rank())
      logger().info("resumed from {}: epoch {}, batch {}, step {}", from->string(), epoch_ + 1,
                    batch_, step_);
  }
  FitRun run(*this, run_start);
  while (!finished()) {
    const EpochPass pass = train_pass(run);
    if (run.stop_signal()) {  // mid-epoch: save where we are, without evaluating
      run.result.stop_signal = run.stop_signal();
      if (!options_.checkpoint_dir().empty()) run.result.last_checkpoint = save_checkpoint();
      break;
    }
    if (!end_epoch(run, pass)) break;
  }
  return summary(run);
}

Trainer::EpochPass Trainer::train_pass(FitRun& run) {
  EpochPass pass;
  pass.start = Clock::now();
  if (batch_ == 0) {
    train_loss_sum_.zero_();
    train_samples_ = 0;
  }
  train_loader_.set_epoch(epoch_);
  train_loader_.set_start_batch(batch_);
  model_.ptr()->train();
  run.progress.start_epoch(epoch_ + 1, options_.epochs(), train_loader_.num_batches(), batch_);
  const int64_t pass_start = batch_;
  for (const data::Batch& batch : train_loader_) {
    const MicroBatch micro = micro_batch(batch.batch_index, pass_start);
    if (micro.first) start_profile_if_due(run);
    train_step(batch, micro, run.graph());
    if (micro.last) end_profile_if_due(run, /*force=*/false);
    batch_ = batch.batch_index + 1;
    pass.images += batch.size();
    pass.units += batch.size() * objective_->units_per_sample(batch.images);
    if (run.progress.due(batch_))
      run.progress.show(batch_,
                        train_loss_sum_.item<double>() / static_cast<double>(train_samples_),
                        static_cast<double>(pass.units) / seconds_since(pass.start));
    // Checks and stops fall between optimizer steps, so a checkpoint never holds half a group.
    if (!micro.last) continue;
    // Every rank at the same steps: the check is collective under data parallelism.
    if (step_ % options_.log_every() == 0) {
      const auto [loss_sum, samples] = check_finite_loss();
      if (run.tensorboard && samples > 0) log_step(run, loss_sum / static_cast<double>(samples));
    }
    if (run.stop_signal() || reached_max_steps()) break;
  }
  run.progress.end_epoch();
  // A run that stops inside the range (max_steps, a signal, the last epoch) ends the profile.
  if (finished() || run.stop_signal()) end_profile_if_due(run, /*force=*/true);
  pass.seconds = seconds_since(pass.start);
  run.train_seconds += pass.seconds;
  run.images += pass.images;
  run.units += pass.units;
  return pass;
}

bool Trainer::end_epoch(FitRun& run, const EpochPass& pass) {
  const auto [loss_sum, samples] = check_finite_loss();
  run.result.test = evaluate();
  // A step that made the weights non-finite can still have had a finite loss itself.
  MINIDL_CHECK(std::isfinite(run.result.test.loss), "Trainer: the test loss after step ", step_,
               " (epoch ", epoch_ + 1, ") is ", run.result.test.loss,
               ": the model's weights are "
               "no longer finite. Stopping without a checkpoint (the newest one, if any, is "
               "from before). Try a lower learning rate");
  EpochMetrics metrics;
  metrics.epoch = epoch_ + 1;
  metrics.step = step_;
  metrics.lr = last_step_lr_;
  metrics.train_loss = samples > 0 ? loss_sum / static_cast<double>(samples) : 0;
  metrics.test_loss = run.result.test.loss;
  metrics.test_accuracy = run.result.test.accuracy;
  metrics.images_per_sec =
      pass.seconds > 0 ? static_cast<double>(pass.images * world_size_) / pass.seconds : 0;
  if (objective_->unit() == "tok" && pass.seconds > 0)
    metrics.tokens_per_sec = static_cast<double>(pass.units * world_size_) / pass.seconds;
  metrics.seconds = seconds_since(pass.start);
  metrics.precision = precision_name(options_.precision());
  print_epoch_line(metrics, batch_);
  run.result.history.push_back(metrics);

  // An epoch cut short by max_steps stays the epoch in progress, so that a resumed run with
  // more steps finishes it.
  const bool finished = batch_ == train_loader_.num_batches();
  const int64_t finished_epoch = epoch_ + 1;
  if (finished) {
    // Before the checkpoint, which then holds the lrs the next epoch trains with.
    if (plateau_scheduler_ != nullptr) step_plateau_scheduler(run.result.test);
    ++epoch_;
    batch_ = 0;
  }
  const bool last = epoch_ == options_.epochs() || reached_max_steps();
  const bool due = finished && finished_epoch % options_.checkpoint_every() == 0;
  if (!options_.checkpoint_dir().empty() && (last || due || run.stop_signal()))
    run.result.last_checkpoint = save_checkpoint();
  // After the checkpoint, so that a line that cannot be written (a full disk) costs no checkpoint.
  if (run.metrics_log) run.metrics_log->append(metrics);
  if (run.tensorboard) log_evaluation(run, metrics);
  if (run.stop_signal()) {
    run.result.stop_signal = run.stop_signal();
    return false;
  }
  return true;
}

void Trainer::start_profile_if_due(FitRun& run) const {
  const auto [first, last] = options_.profile_steps();
  if (is_main_rank() && !run.profile && last > first && step_ == first)
    run.profile.emplace(profiler::ProfileOptions{.record_shapes = true});  // shapes in the trace
}

void Trainer::end_profile_if_due(FitRun& run, bool force) const {
  if (!run.profile || (!force && step_ < options_.profile_steps().second)) return;
  run.profile->stop();
  run.profile->export_chrome_trace(options_.profile_trace());
  logger().info("profile of steps {} to {} (Chrome trace: {}):\n{}",
                options_.profile_steps().first + 1, step_, options_.profile_trace().string(),
                run.profile->table());
  run.profile.reset();
}

void Trainer::log_step(FitRun& run, double running_loss) {
  TensorBoardWriter& writer = *run.tensorboard;
  writer.add_scalar("step/train_loss", running_loss, step_);
  writer.add_scalar("step/lr", last_step_lr_, step_);
  // Reading these waits for the device, as the loss check just did: only every log_every().
  if (last_grad_norm_.defined())
    writer.add_scalar("step/grad_norm", last_grad_norm_.item<double>(), step_);
  if (scaler_.is_enabled()) writer.add_scalar("step/grad_scale", scaler_.get_scale(), step_);
}

void Trainer::log_evaluation(FitRun& run, const EpochMetrics& metrics) {
  TensorBoardWriter& writer = *run.tensorboard;
  writer.add_scalar("loss/train", metrics.train_loss, metrics.step);
  writer.add_scalar("loss/test", metrics.test_loss, metrics.step);
  writer.add_scalar("accuracy/test", metrics.test_accuracy, metrics.step);
  writer.add_scalar("lr", metrics.lr, metrics.step);
  writer.add_scalar("throughput/images_per_sec", metrics.images_per_sec, metrics.step);
  if (metrics.tokens_per_sec > 0)
    writer.add_scalar("throughput/tokens_per_sec", metrics.tokens_per_sec, metrics.step);
  const int64_t every = options_.tensorboard_histogram_every();
  if (every == 0 || ++run.evaluations % every != 0) return;
  for (const auto& item : model_.ptr()->named_parameters()) {
    writer.add_histogram("weights/" + item.key(), item.value(), metrics.step);
    if (item.value().grad().defined())
      writer.add_histogram("grads/" + item.key(), item.value().grad(), metrics.step);
  }
}

optim::CheckpointableScheduler* Trainer::checkpointed_scheduler() const {
  if (scheduler_ != nullptr) return scheduler_;
  return plateau_scheduler_;
}

void Trainer::step_plateau_scheduler(const Evaluation& evaluation) {
  const bool lower_is_better = plateau_scheduler_->options().mode() == optim::PlateauMode::kMin;
  double metric = lower_is_better ? evaluation.loss : evaluation.accuracy;
  if (world_size_ > 1) {
    // Ranks whose test shards differ see different metrics; one lr schedule needs one.
    Tensor sum = tensor({metric}, kFloat64);
    distributed::default_process_group(Device(kCPU))->all_reduce(sum);
    metric = sum.data_ptr<double>()[0] / static_cast<double>(world_size_);
  }
  plateau_scheduler_->step(metric);
}

TrainingResult Trainer::summary(FitRun& run) const {
  TrainingResult result = std::move(run.result);
  result.epochs = epoch_;
  result.steps = step_;
  result.images_trained = run.images * world_size_;
  result.train_images_per_sec =
      run.train_seconds > 0 ? static_cast<double>(result.images_trained) / run.train_seconds : 0;
  if (objective_->unit() == "tok") {
    result.tokens_trained = run.units * world_size_;
    result.train_tokens_per_sec =
        run.train_seconds > 0 ? static_cast<double>(result.tokens_trained) / run.train_seconds : 0;
  }
  result.wall_seconds = seconds_since(run.start);
  if (run.graph() != nullptr) result.graph_replays = static_cast<int64_t>(run.graph()->replays());
  return result;
}

}  // namespace minidl::train
