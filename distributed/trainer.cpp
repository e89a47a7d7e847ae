#include "distributed/trainer.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>

#include "core/autocast.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/generator.h"
#include "core/logging.h"
#include "distributed/init.h"
#include "distributed/progress_line.h"
#include "distributed/stop_signal.h"
#include "distributed/training_checkpoint.h"
#include "nn/modules/dropout.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "optim/scalar_map.h"

namespace minidl::distributed {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLossSumName = "train_loss_sum";
constexpr const char* kSamplesKey = "train_samples";
constexpr const char* kWorldSizeKey = "world_size";
constexpr const char* kPrecisionKey = "precision";
constexpr const char* kGradScalerKey = "grad_scaler";

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

// The images of a batch, checked: the model wants float pixels, which the loader's
// normalisation makes.
const Tensor& checked_images(const data::Batch& batch) {
  MINIDL_CHECK(is_floating_point(batch.images.dtype()), "Trainer: expected float images from ",
               "the loader (normalise them with DataLoaderOptions::augment), got ",
               batch.images.dtype());
  return batch.images;
}

}  // namespace

Trainer::Trainer(nn::AnyModule model, optim::Optimizer& optimizer, data::DataLoader& train_loader,
                 data::DataLoader& test_loader, TrainerOptions options)
    : model_(std::move(model)),
      optimizer_(optimizer),
      train_loader_(train_loader),
      test_loader_(test_loader),
      options_(std::move(options)),
      scaler_(amp::GradScalerOptions().enabled(options_.precision() == kFloat16)) {
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
  if (is_initialized() && distributed::world_size() > 1) {
    rank_ = distributed::rank();
    world_size_ = distributed::world_size();
    ddp_.emplace(model_);  // collective: rank 0's weights on every rank
  }
}

Tensor Trainer::forward(const Tensor& images) {
  return ddp_ ? ddp_->forward(images) : model_.forward(images);
}

std::pair<double, int64_t> Trainer::global_train_loss() const {
  const double loss_sum = train_loss_sum_.item<double>();
  if (world_size_ == 1) return {loss_sum, train_samples_};
  Tensor sums = tensor({loss_sum, static_cast<double>(train_samples_)}, kFloat64);
  default_process_group(Device(kCPU))->all_reduce(sums);
  return {sums.data_ptr<double>()[0], static_cast<int64_t>(sums.data_ptr<double>()[1])};
}

std::optional<fs::path> Trainer::resume_path() const {
  if (options_.resume().empty()) return std::nullopt;
  if (options_.resume() == "auto") return newest_checkpoint(options_.checkpoint_dir());
  MINIDL_CHECK(fs::is_regular_file(options_.resume()), "checkpoint ", options_.resume(),
               ": no such file");
  return fs::path(options_.resume());
}

void Trainer::restore(const fs::path& path) {
  TrainingCheckpoint checkpoint =
      load_training_checkpoint(path, *model_.ptr(), optimizer_, scheduler_,
                               options_.model_name(), options_.dataset_name());
  const Tensor* loss_sum = nullptr;
  for (const auto& [name, tensor] : checkpoint.tensors)
    if (name == kLossSumName) loss_sum = &tensor;
  MINIDL_CHECK(loss_sum != nullptr && loss_sum->numel() == 1 && loss_sum->dtype() == kFloat32,
               "checkpoint ", path.string(), ": expected the float32 scalar trainer.",
               kLossSumName);
  const auto samples = checkpoint.metadata.find(kSamplesKey);
  MINIDL_CHECK(samples != checkpoint.metadata.end(), "checkpoint ", path.string(),
               ": expected the entry \"", kSamplesKey, "\"");
  const auto saved_precision = checkpoint.metadata.find(kPrecisionKey);
  const std::string precision = precision_name(options_.precision());
  MINIDL_CHECK(saved_precision != checkpoint.metadata.end() &&
                   saved_precision->second == precision,
               "checkpoint ", path.string(), " was trained in ",
               saved_precision == checkpoint.metadata.end() ? "?" : saved_precision->second,
               " precision, but this run uses ", precision, "; resume with the same precision");
  if (scaler_.is_enabled()) {
    const auto scaler_state = checkpoint.metadata.find(kGradScalerKey);
    MINIDL_CHECK(scaler_state != checkpoint.metadata.end(), "checkpoint ", path.string(),
                 ": expected the GradScaler's state of a float16 run, found none");
    scaler_.load_state_dict(optim::scalar_map_from_json(
        scaler_state->second, "checkpoint " + path.string() + " grad_scaler"));
  }
  const auto saved_world = checkpoint.metadata.find(kWorldSizeKey);
  const int64_t saved_world_size =
      saved_world == checkpoint.metadata.end() ? 1 : std::stoll(saved_world->second);
  // A checkpoint taken mid-epoch on another number of ranks: the ranks' shards interleave
  // one shuffled order, so the same number of samples in is about the same place in it.
  if (saved_world_size != world_size_ && checkpoint.batch > 0) {
    const int64_t batch = checkpoint.batch * saved_world_size / world_size_;
    if (is_main_rank())
      logger().warn("checkpoint {} stopped mid-epoch on {} ranks; on {} ranks the epoch "
                    "continues at batch {} (about the same samples in, not exactly)",
                    path.string(), saved_world_size, world_size_, batch);
    checkpoint.batch = batch;
  }
  MINIDL_CHECK(checkpoint.batch <= train_loader_.num_batches(), "checkpoint ", path.string(),
               " stopped at batch ", checkpoint.batch, " of its epoch, but this run's epochs have ",
               train_loader_.num_batches(), " batches (was it saved with another batch size?)");
  epoch_ = checkpoint.epoch;
  batch_ = checkpoint.batch;
  step_ = checkpoint.step;
  train_loss_sum_ = loss_sum->reshape({}).to(device_of(model_));
  train_samples_ = std::stoll(samples->second);
  if (!is_main_rank()) {  // the saved sum is over every rank: rank 0 carries it on
    train_loss_sum_.zero_();
    train_samples_ = 0;
  }
  default_generator().set_state(checkpoint.generator);
  if (is_main_rank())
    logger().info("resumed from {}: epoch {}, batch {}, step {}", path.string(), epoch_ + 1,
                 batch_, step_);
}

fs::path Trainer::save_checkpoint() {
  if (ddp_) ddp_->sync_buffers();  // collective, as is the loss sum below
  const auto [loss_sum, samples] = global_train_loss();
  const fs::path path = checkpoint_path(options_.checkpoint_dir(), step_);
  if (!is_main_rank()) return path;
  TrainingCheckpoint checkpoint;
  checkpoint.model = options_.model_name();
  checkpoint.dataset = options_.dataset_name();
  checkpoint.epoch = epoch_;
  checkpoint.batch = batch_;
  checkpoint.step = step_;
  checkpoint.generator = default_generator().state();
  // One process saves its sum tensor itself, so that a resumed run continues bit for bit.
  checkpoint.tensors.emplace_back(kLossSumName, world_size_ == 1
                                                    ? train_loss_sum_
                                                    : scalar_tensor(loss_sum, kFloat32));
  checkpoint.metadata[kSamplesKey] = std::to_string(samples);
  checkpoint.metadata[kWorldSizeKey] = std::to_string(world_size_);
  checkpoint.metadata[kPrecisionKey] = precision_name(options_.precision());
  if (scaler_.is_enabled()) checkpoint.metadata[kGradScalerKey] = optim::to_json(scaler_.state_dict());
  fs::create_directories(options_.checkpoint_dir());
  save_training_checkpoint(path, *model_.ptr(), optimizer_, scheduler_, checkpoint);
  prune_checkpoints(options_.checkpoint_dir(), options_.keep_checkpoints());
  logger().info("saved checkpoint {}", path.string());
  return path;
}

void Trainer::train_step(const data::Batch& batch, TrainStepGraph* graph) {
  const Tensor& images = checked_images(batch);
  if (graph != nullptr)
    graph->run(images, batch.labels);
  else
    run_step(images, batch.labels);
  if (scheduler_ != nullptr) scheduler_->step();  // on the host: a replay reads the new lr
  train_samples_ += batch.size();
  ++step_;
}

void Trainer::run_step(const Tensor& images, const Tensor& labels) {
  optimizer_.zero_grad();
  Tensor loss;
  {
    MixedPrecisionScope mixed_precision(options_.precision());
    loss = cross_entropy(forward(images), labels, Reduction::Mean,
                         options_.label_smoothing());  // float32 under autocast too
  }
  scaler_.scale(loss).backward();  // the scaler passes everything through unless float16
  scaler_.step(optimizer_);
  scaler_.update();
  train_loss_sum_.add_(loss.detach(), static_cast<double>(labels.size(0)));
}

bool Trainer::cuda_graph_applies() const {
  const Device device = device_of(model_);
  if (!options_.cuda_graph() || !device.is_cuda() || world_size_ > 1) return false;
  // A dropout mask drawn inside a replay would repeat the captured step's (core/cuda/graph.h).
  for (const std::shared_ptr<nn::Module>& module : model_.ptr()->modules()) {
    const auto* dropout = dynamic_cast<const nn::DropoutImpl*>(module.get());
    if (dropout != nullptr && dropout->options.p() > 0) {
      if (is_main_rank())
        logger().info("the model has dropout: training steps run eagerly, without a CUDA graph");
      return false;
    }
  }
  return true;
}

bool Trainer::reached_max_steps() const {
  return options_.max_steps() > 0 && step_ >= options_.max_steps();
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
  int64_t samples = 0;
  test_loader_.set_epoch(0);
  MixedPrecisionScope mixed_precision(options_.precision());
  for (const data::Batch& batch : test_loader_) {
    const Tensor logits = model_.forward(checked_images(batch));
    loss_sum.add_(cross_entropy(logits, batch.labels, Reduction::Sum));
    correct.add_(sum(eq(argmax(logits, 1), batch.labels).to(kInt64)));
    samples += batch.size();
  }
  module.train(was_training);
  MINIDL_CHECK(samples > 0, "Trainer::evaluate: the test loader gave no samples");
  return {loss_sum.item<double>() / static_cast<double>(samples),
          static_cast<double>(correct.item<int64_t>()) / static_cast<double>(samples), samples};
}

void Trainer::print_epoch_line(const EpochMetrics& metrics) const {
  if (!is_main_rank()) return;
  std::printf("epoch %lld/%lld  train_loss %.4f  test_loss %.4f  test_accuracy %.4f  %.0f img/s  "
              "%.1f s\n",
              static_cast<long long>(metrics.epoch), static_cast<long long>(options_.epochs()),
              metrics.train_loss, metrics.test_loss, metrics.test_accuracy,
              metrics.images_per_sec, metrics.seconds);
  std::fflush(stdout);
}

TrainingResult Trainer::fit() {
  const Clock::time_point run_start = Clock::now();
  epoch_ = batch_ = step_ = train_samples_ = 0;
  train_loss_sum_ = zeros({}, device_of(model_));
  if (const std::optional<fs::path> from = resume_path()) restore(*from);

  std::optional<MetricsLog> metrics_log;
  if (!options_.metrics_path().empty() && is_main_rank())
    metrics_log.emplace(options_.metrics_path(), epoch_);
  std::optional<StopSignalGuard> signals;
  if (options_.handle_signals() && world_size_ == 1) signals.emplace();
  auto stop_signal = [&] { return signals ? signals->requested() : std::nullopt; };
  const bool checkpoints = !options_.checkpoint_dir().empty();

  // From here to the end of fit(), the training stream of the graph is current (see
  // distributed/train_step_graph.h): the loaders deliver to it, evaluation runs on it.
  std::optional<TrainStepGraph> step_graph;
  if (cuda_graph_applies())
    step_graph.emplace(device_of(model_).index, train_loader_.options().batch_size(),
                       [this](const Tensor& images, const Tensor& labels) {
                         run_step(images, labels);
                       });
  TrainStepGraph* graph = step_graph ? &*step_graph : nullptr;

  TrainingResult result;
  ProgressLine progress(is_main_rank() ? options_.progress() : ProgressMode::kNone,
                        options_.log_every());
  double train_seconds = 0;
  int64_t images_this_run = 0;
  while (epoch_ < options_.epochs() && !reached_max_steps()) {
    const Clock::time_point epoch_start = Clock::now();
    if (batch_ == 0) {
      train_loss_sum_.zero_();
      train_samples_ = 0;
    }
    train_loader_.set_epoch(epoch_);
    train_loader_.set_start_batch(batch_);
    model_.ptr()->train();
    progress.start_epoch(epoch_ + 1, options_.epochs(), train_loader_.num_batches(), batch_);
    int64_t images_this_pass = 0;
    for (const data::Batch& batch : train_loader_) {
      train_step(batch, graph);
      batch_ = batch.batch_index + 1;
      images_this_pass += batch.size();
      if (progress.due(batch_))
        progress.show(batch_, train_loss_sum_.item<double>() / static_cast<double>(train_samples_),
                      static_cast<double>(images_this_pass) / seconds_since(epoch_start));
      if (stop_signal() || reached_max_steps()) break;
    }
    progress.end_epoch();
    const double pass_seconds = seconds_since(epoch_start);
    train_seconds += pass_seconds;
    images_this_run += images_this_pass;

    if (stop_signal()) {  // mid-epoch: save where we are, without evaluating
      result.stop_signal = stop_signal();
      if (checkpoints) result.last_checkpoint = save_checkpoint();
      break;
    }
    result.test = evaluate();
    EpochMetrics metrics;
    metrics.epoch = epoch_ + 1;
    metrics.step = step_;
    metrics.lr = optimizer_.param_groups().front().options().get_lr();
    const auto [loss_sum, samples] = global_train_loss();
    metrics.train_loss = samples > 0 ? loss_sum / static_cast<double>(samples) : 0;
    metrics.test_loss = result.test.loss;
    metrics.test_accuracy = result.test.accuracy;
    metrics.images_per_sec =
        pass_seconds > 0 ? static_cast<double>(images_this_pass * world_size_) / pass_seconds : 0;
    metrics.seconds = seconds_since(epoch_start);
    metrics.precision = precision_name(options_.precision());
    print_epoch_line(metrics);
    if (metrics_log) metrics_log->append(metrics);
    result.history.push_back(metrics);

    // An epoch cut short by max_steps stays the epoch in progress, so that a resumed run with
    // more steps finishes it.
    const bool finished = batch_ == train_loader_.num_batches();
    const int64_t finished_epoch = epoch_ + 1;
    if (finished) {
      ++epoch_;
      batch_ = 0;
    }
    const bool last = epoch_ == options_.epochs() || reached_max_steps();
    const bool due = finished && finished_epoch % options_.checkpoint_every() == 0;
    if (checkpoints && (last || due || stop_signal())) result.last_checkpoint = save_checkpoint();
    if (stop_signal()) {
      result.stop_signal = stop_signal();
      break;
    }
  }
  result.epochs = epoch_;
  result.steps = step_;
  result.train_images_per_sec =
      train_seconds > 0 ? static_cast<double>(images_this_run * world_size_) / train_seconds : 0;
  result.wall_seconds = seconds_since(run_start);
  if (graph != nullptr) result.graph_replays = static_cast<int64_t>(graph->replays());
  return result;
}

}  // namespace minidl::distributed
