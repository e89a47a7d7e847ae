#include "minidl/tools/trainers/trainer_program.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "minidl/minidl.h"
#include "minidl/tools/trainers/command_line.h"

namespace minidl::tools {

namespace {

namespace fs = std::filesystem;

// Everything the command line sets.
struct CommandLine : RunOptions {
  std::string data_dir;
  std::string dataset;
  std::string model;
  int64_t epochs = 0;
  int64_t batch_size = 0;
  std::string optimizer = "sgd";
  double lr = 0;
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;
  std::string schedule;
  double warmup_epochs = 0;
  int64_t checkpoint_every = 1;
  int64_t max_steps = 0;
  int64_t limit_train = 0;
  int64_t limit_test = 0;
};

// Upper bound of --epochs and --warmup-epochs: keeps epochs x steps per epoch far inside int64_t.
constexpr int64_t kMaxEpochs = 1'000'000;

void define_options(CLI::App& app, CommandLine& line, const TrainerProgram& program) {
  const TrainerRecipe& recipe = program.recipe;
  line.dataset = program.datasets.front();
  line.model = program.models.front();
  line.epochs = recipe.epochs;
  line.batch_size = recipe.batch_size;
  line.lr = recipe.lr;
  line.momentum = recipe.momentum;
  line.nesterov = recipe.nesterov;
  line.weight_decay = recipe.weight_decay;
  line.schedule = recipe.schedule;
  line.warmup_epochs = recipe.warmup_epochs;
  line.checkpoint_dir = "runs/" + program.name;

  app.add_option("--data-dir", line.data_dir,
                 "Folder holding the dataset's files (default: <MINIDL_DATA or "
                 "/usr/share/datasets>/fashion-mnist, .../mnist or .../cifar-10-batches-bin)");
  app.add_option("--dataset", line.dataset, "Dataset to train on")
      ->check(CLI::IsMember(program.datasets))
      ->capture_default_str();
  app.add_option("--model", line.model, "Model to train")
      ->check(CLI::IsMember(program.models))
      ->capture_default_str();
  app.add_option("--epochs", line.epochs, "Epochs to train")
      ->transform(integer_in_range<int64_t>(1, kMaxEpochs))
      ->capture_default_str();
  app.add_option("--batch-size", line.batch_size, "Images per step (per rank)")
      ->transform(integer_at_least(1))
      ->capture_default_str();
  app.add_option("--optimizer", line.optimizer,
                 "sgd (with --momentum, --nesterov), adam (L2 weight decay) or adamw (decoupled "
                 "weight decay); adam and adamw take betas (0.9, 0.999) and eps 1e-8, and want "
                 "a smaller --lr, e.g. 1e-3")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
      ->capture_default_str();
  app.add_option("--lr", line.lr, "Peak learning rate")
      ->check(finite_at_least(0, Bound::kExclusive))
      ->capture_default_str();
  app.add_option("--momentum", line.momentum, "SGD momentum (sgd only)")
      ->check(finite_in_range(0, 1))
      ->capture_default_str();
  // A flag's default does not show in CLI11's help (and "--no-nesterov{false}" reads as one).
  app.add_flag(
      "--nesterov,!--no-nesterov", line.nesterov,
      std::string("Nesterov momentum (default: ") + (recipe.nesterov ? "on" : "off") + ")");
  app.add_option("--weight-decay", line.weight_decay,
                 "Weight decay: L2 for sgd and adam, decoupled for adamw")
      ->check(finite_at_least(0, Bound::kInclusive))
      ->capture_default_str();
  app.add_option("--schedule", line.schedule,
                 "Learning-rate schedule over all steps: step (x0.1 at 50% and 75%), cosine "
                 "(down to 0), onecycle (warm up to --lr, then down), exponential (down to "
                 "0.01x), polynomial (linear down to 0), or plateau (x0.1 after 2 epochs "
                 "without a better test loss)")
      ->check(CLI::IsMember({"step", "cosine", "onecycle", "exponential", "polynomial", "plateau"}))
      ->capture_default_str();
  app.add_option("--warmup-epochs", line.warmup_epochs,
                 "Linear warm-up from 0.1x the learning rate over this many epochs (every "
                 "schedule but onecycle and plateau)")
      ->check(finite_in_range(0, kMaxEpochs))
      ->capture_default_str();
  define_run_options(
      app, line,
      {.accumulated = "Batches",
       .seeded = "the initial weights, the shuffle and the augmentation",
       .resumable = "--epochs, --max-steps, --checkpoint-dir, --checkpoint-every, --metrics, "
                    "--tensorboard, --tensorboard-histograms, --profile-steps, --profile-trace, "
                    "--workers, --device, --zero, "
                    "--cuda-graph, --deterministic, --cudnn-benchmark, --log-every, --log-level, "
                    "--no-progress",
       .metrics = "per epoch",
       .progress = "inside an epoch (the line after each epoch stays)"});
  app.add_option("--checkpoint-every", line.checkpoint_every,
                 "Write a checkpoint every N epochs, and always at the end")
      ->transform(integer_at_least(1))
      ->capture_default_str();
  app.add_option("--max-steps", line.max_steps, "Stop after this many steps (0: no limit)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  app.add_option("--limit-train", line.limit_train,
                 "Train on the first N training images only (0: all)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  app.add_option("--limit-test", line.limit_test,
                 "Evaluate on the first N test images only (0: all)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
}

// ---- datasets ----

struct DatasetSpec {
  std::vector<float> mean, std;  // per channel, of the training images scaled to [0, 1]
  int64_t crop_padding = 0;      // of the random crop, when augmenting
};

DatasetSpec dataset_spec(const std::string& dataset) {
  // Means and standard deviations of each training set's pixels (the usual published values).
  if (dataset == "fashion-mnist") return {{0.2860f}, {0.3530f}, 2};
  if (dataset == "mnist") return {{0.1307f}, {0.3081f}, 2};
  return {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}, 4};  // cifar10
}

fs::path dataset_directory(const CommandLine& line) {
  if (!line.data_dir.empty()) return line.data_dir;
  if (line.dataset == "fashion-mnist") return data::fashion_mnist_directory();
  if (line.dataset == "mnist") return data::data_root() / "mnist";
  return data::data_root() / data::kCifar10Folder;
}

// The first `limit` samples of `dataset` (all when limit is 0 or beyond its size).
std::shared_ptr<data::InMemoryDataset> first_samples(std::shared_ptr<data::InMemoryDataset> dataset,
                                                     int64_t limit) {
  if (limit == 0 || limit >= dataset->size()) return dataset;
  return std::make_shared<data::InMemoryDataset>(dataset->images().narrow(0, 0, limit),
                                                 dataset->labels().narrow(0, 0, limit),
                                                 dataset->num_classes());
}

std::shared_ptr<data::InMemoryDataset> read_split(const CommandLine& line, data::Split split) {
  const fs::path directory = dataset_directory(line);
  const char* hint = line.dataset == "fashion-mnist"
                         ? "install the Debian package dataset-fashion-mnist or pass --data-dir"
                         : "pass --data-dir with the dataset's folder";
  MINIDL_CHECK(fs::is_directory(directory), "dataset ", line.dataset, ": no folder ",
               directory.string(), "; ", hint);
  if (line.dataset == "fashion-mnist") return data::read_fashion_mnist(split, directory);
  if (line.dataset == "mnist") return data::read_mnist(directory, split);
  return data::read_cifar10(split, directory);
}

// ---- model, device, optimizer, schedule ----

nn::AnyModule make_model(const std::string& name, int64_t in_channels, int64_t num_classes) {
  if (name == "lenet") {
    MINIDL_CHECK(in_channels == 1, "--model lenet takes 1-channel 28x28 images; this dataset has ",
                 in_channels, " channels");
    return models::LeNet(models::LeNetOptions().num_classes(num_classes));
  }
  const auto options = models::ResNetOptions().in_channels(in_channels).num_classes(num_classes);
  if (name == "resnet20") return models::ResNet20(options);
  return models::ResNet18(options);
}

// The optimizer over `parameters`, as --optimizer says; with --zero 1 its state sharded over the
// ranks in ZeRO-1's reduce-scatter
// form (distributed/zero_redundancy_optimizer.h; the Trainer attaches it to its DDP wrapper).
std::unique_ptr<optim::Optimizer> make_optimizer(const CommandLine& line,
                                                 std::vector<Tensor> parameters) {
  const auto make =
      [&line](std::vector<optim::OptimizerParamGroup> groups) -> std::unique_ptr<optim::Optimizer> {
    if (line.optimizer == "adam")
      return std::make_unique<optim::Adam>(
          std::move(groups), optim::AdamOptions(line.lr).weight_decay(line.weight_decay));
    if (line.optimizer == "adamw")
      return std::make_unique<optim::AdamW>(
          std::move(groups), optim::AdamWOptions(line.lr).weight_decay(line.weight_decay));
    return std::make_unique<optim::SGD>(std::move(groups), optim::SGDOptions(line.lr)
                                                               .momentum(line.momentum)
                                                               .nesterov(line.nesterov)
                                                               .weight_decay(line.weight_decay));
  };
  std::vector<optim::OptimizerParamGroup> groups{optim::OptimizerParamGroup(std::move(parameters))};
  if (line.zero == 1)
    return std::make_unique<distributed::ZeroRedundancyOptimizer>(
        std::move(groups), make,
        distributed::ZeroRedundancyOptimizerOptions().sharding(
            distributed::ZeroSharding::ReduceScatter));
  return make(std::move(groups));
}

// The plateau schedule: stepped by the Trainer after each epoch on the test loss.
std::unique_ptr<optim::ReduceLROnPlateau> make_plateau_schedule(optim::Optimizer& optimizer) {
  return std::make_unique<optim::ReduceLROnPlateau>(
      optimizer, optim::ReduceLROnPlateauOptions().factor(0.1).patience(2));
}

// Every schedule but plateau, stepped after each optimizer step.
std::unique_ptr<optim::LRScheduler> make_step_schedule(const CommandLine& line,
                                                       optim::Optimizer& optimizer,
                                                       int64_t steps_per_epoch) {
  // Over every epoch asked for, whatever --max-steps says: --max-steps stops a run early without
  // changing its schedule, so that resuming it takes the steps a straight run takes.
  const int64_t total_steps = std::max<int64_t>(line.epochs * steps_per_epoch, 1);
  if (line.schedule == "onecycle")
    return std::make_unique<optim::OneCycleLR>(optimizer,
                                               optim::OneCycleLROptions(line.lr, total_steps));
  std::unique_ptr<optim::LRScheduler> schedule;
  if (line.schedule == "cosine")
    schedule = std::make_unique<optim::CosineAnnealingLR>(optimizer, total_steps);
  else if (line.schedule == "exponential")
    schedule = std::make_unique<optim::ExponentialLR>(
        optimizer, std::pow(0.01, 1.0 / static_cast<double>(total_steps)));
  else if (line.schedule == "polynomial")
    schedule = std::make_unique<optim::PolynomialLR>(optimizer, total_steps, 1.0);
  else
    schedule = std::make_unique<optim::MultiStepLR>(
        optimizer, std::vector<int64_t>{total_steps / 2, total_steps * 3 / 4}, 0.1);
  const auto warmup_steps = static_cast<int64_t>(line.warmup_epochs * steps_per_epoch);
  if (warmup_steps == 0) return schedule;
  return std::make_unique<optim::LinearWarmup>(std::move(schedule), warmup_steps, 0.1);
}

// One process shuffles the whole set; under mpirun each rank takes its shard of one shuffled
// order, so the global batch is the batch size times the world size.
data::DataLoader make_train_loader(std::shared_ptr<const data::Dataset> train_set,
                                   data::DataLoaderOptions options, uint64_t seed) {
  if (distributed::world_size() == 1)
    return data::DataLoader(std::move(train_set), options.shuffle(true).seed(seed));
  auto sampler = std::make_shared<data::DistributedSampler>(
      train_set->size(),
      data::DistributedSamplerOptions(distributed::rank(), distributed::world_size())
          .shuffle(true)
          .seed(seed));
  return data::DataLoader(std::move(train_set), std::move(sampler), options);
}

// ---- what the run reports ----

void print_summary(const CommandLine& line, const Device& device,
                   const train::TrainingResult& result) {
  nlohmann::ordered_json summary;
  summary["model"] = line.model;
  summary["dataset"] = line.dataset;
  summary["epochs"] = result.epochs;
  summary["steps"] = result.steps;
  summary["test_accuracy"] = result.test.accuracy;
  summary["test_loss"] = result.test.loss;
  // null when this run trained nothing (it resumed a run that had finished).
  summary["train_images_per_sec"] = result.images_trained > 0
                                        ? nlohmann::ordered_json(result.train_images_per_sec)
                                        : nlohmann::ordered_json(nullptr);
  summary["wall_seconds"] = result.wall_seconds;
  summary["device"] = device.str();
  summary["precision"] = line.precision;
  summary["cuda_graph"] = result.graph_replays > 0;
  summary["deterministic"] = line.deterministic == "on";
  summary["tf32"] = line.tf32 == "on";
  summary["cudnn_benchmark"] = line.cudnn_benchmark == "on";
  summary["world_size"] = distributed::world_size();
  std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
}

// Options that do not combine.
void check_combinations(const CommandLine& line) {
  if (line.schedule == "onecycle" && line.warmup_epochs > 0)
    throw UsageError(
        "--warmup-epochs does not combine with --schedule onecycle, which warms up "
        "by itself");
  if (line.schedule == "plateau" && line.warmup_epochs > 0)
    throw UsageError(
        "--warmup-epochs does not combine with --schedule plateau, which follows the test "
        "loss from epoch to epoch");
}

// The settings that define the run (train/run_settings.h), compared with a checkpoint's on
// resume. Not among them: what may change on resume (--epochs, --max-steps, the paths, --workers,
// --device, --cuda-graph, --deterministic, --cudnn-benchmark, logging), and what is checked on its
// own (--model,
// --dataset, --precision, --accumulate, --clip-grad-norm). The batch is the global one: a run may
// resume on another number of ranks with the same batch per step.
train::RunSettings run_settings(const CommandLine& line, int64_t world_size) {
  return {{"--batch-size x ranks", std::to_string(line.batch_size * world_size)},
          {"--optimizer", line.optimizer},
          {"--lr", number_text(line.lr)},
          {"--momentum", number_text(line.momentum)},
          {"--nesterov", line.nesterov ? "on" : "off"},
          {"--weight-decay", number_text(line.weight_decay)},
          {"--schedule", line.schedule},
          {"--warmup-epochs", number_text(line.warmup_epochs)},
          {"--seed", std::to_string(line.seed)},
          {"--limit-train", std::to_string(line.limit_train)},
          {"--limit-test", std::to_string(line.limit_test)},
          {"--tf32", line.tf32}};
}

// The data fits the run before anything trains (rather than at the first evaluation, after an
// epoch): the test split has images, of the training split's size, and LeNet's are 1x28x28.
void check_data(const CommandLine& line, const data::InMemoryDataset& train_set,
                const data::InMemoryDataset& test_set) {
  const std::string where = "dataset " + line.dataset + " in " + dataset_directory(line).string();
  const auto text = [](const data::ImageSpec& spec) {
    return std::to_string(spec.channels) + "x" + std::to_string(spec.height) + "x" +
           std::to_string(spec.width);
  };
  MINIDL_CHECK(test_set.size() > 0, where, ": the test split has no images");
  const data::ImageSpec train_spec = train_set.image_spec(), test_spec = test_set.image_spec();
  MINIDL_CHECK(test_spec.shape() == train_spec.shape(), where, ": the test images are ",
               text(test_spec), ", but the training images are ", text(train_spec));
  MINIDL_CHECK(line.model != "lenet" || (train_spec.shape() == Shape{1, 28, 28}), where,
               ": its images are ", text(train_spec),
               ", but lenet takes 1x28x28 (Fashion-MNIST's and MNIST's size)");
}

// A batch larger than the training set would make every epoch one short batch. train_size: the
// images left after --limit-train.
void check_batch_size(const CommandLine& line, int64_t train_size) {
  if (line.batch_size <= train_size) return;
  const std::string limit =
      line.limit_train > 0 ? "; --limit-train " + std::to_string(line.limit_train) : "";
  throw UsageError("--batch-size " + std::to_string(line.batch_size) +
                   " is larger than the training set (" + std::to_string(train_size) + " images" +
                   limit + ")");
}

int train(const TrainerProgram& program, const CommandLine& line) {
  check_combinations(line);
  distributed::init();  // world size 1 without mpirun
  const bool main_rank = distributed::rank() == 0;
  if (main_rank) check_outputs(line.checkpoint_dir, line.resume, line.overwrite, line.metrics);
  set_log_level(line.log_level);
  if (!main_rank && log_level() < LogLevel::Warn) set_log_level(LogLevel::Warn);
  const Device device = choose_device(line.device);
  apply_numerics_options(line);
  const DatasetSpec spec = dataset_spec(line.dataset);
  // A signal while the data loads (seconds, for CIFAR-10) stops the run before it trains, saying
  // so, rather than ending the process without a word.
  std::optional<train::StopSignalGuard> loading_signals;
  if (distributed::world_size() == 1) loading_signals.emplace();
  const auto train_set = first_samples(read_split(line, data::Split::Train), line.limit_train);
  const auto test_set = first_samples(read_split(line, data::Split::Test), line.limit_test);
  if (loading_signals && loading_signals->requested()) {
    std::fprintf(stderr,
                 "%s: stopped by %s while loading the data, before training; nothing was "
                 "written\n",
                 program.name.c_str(), train::signal_name(*loading_signals->requested()).c_str());
    return 128 + *loading_signals->requested();
  }
  loading_signals.reset();
  check_data(line, *train_set, *test_set);
  check_batch_size(line, train_set->size());

  manual_seed(line.seed);
  nn::AnyModule model =
      make_model(line.model, train_set->image_spec().channels, train_set->num_classes());
  model.ptr()->to(device);

  data::AugmentOptions train_augment =
      data::AugmentOptions().normalize(spec.mean, spec.std).seed(line.seed + 1);
  if (program.recipe.augment) train_augment.random_crop(spec.crop_padding).horizontal_flip();
  const auto train_options = data::DataLoaderOptions(line.batch_size)
                                 .num_workers(line.workers)
                                 .device(device)
                                 .augment(train_augment);
  data::DataLoader train_loader = make_train_loader(train_set, train_options, line.seed);
  data::DataLoader test_loader(test_set,
                               data::DataLoaderOptions(1000)
                                   .num_workers(line.workers)
                                   .device(device)
                                   .augment(data::AugmentOptions().normalize(spec.mean, spec.std)));

  const std::unique_ptr<optim::Optimizer> optimizer =
      make_optimizer(line, model.ptr()->parameters());
  // The Trainer steps a schedule once per optimizer step: every --accumulate batches, and once
  // more for an epoch's last, shorter group.
  const int64_t steps_per_epoch =
      (train_loader.num_batches() + line.accumulate - 1) / line.accumulate;
  if (line.warmup_epochs > static_cast<double>(line.epochs) && main_rank)
    logger().warn(
        "--warmup-epochs {} is longer than the run's {} epochs: the learning rate "
        "never reaches --lr {}",
        line.warmup_epochs, line.epochs, line.lr);
  if (line.accumulate > train_loader.num_batches() && main_rank)
    logger().warn(
        "--accumulate {} is more than the {} batches of an epoch: each optimizer step "
        "sums one epoch's batches",
        line.accumulate, train_loader.num_batches());
  std::unique_ptr<optim::LRScheduler> step_schedule;
  std::unique_ptr<optim::ReduceLROnPlateau> plateau_schedule;
  if (line.schedule == "plateau")
    plateau_schedule = make_plateau_schedule(*optimizer);
  else
    step_schedule = make_step_schedule(line, *optimizer, steps_per_epoch);

  train::TrainerOptions options;
  options.epochs(line.epochs)
      .max_steps(line.max_steps)
      .progress(line.no_progress ? train::ProgressMode::kNone : train::ProgressMode::kAuto)
      .log_every(line.log_every)
      .metrics_path(line.metrics)
      .tensorboard_dir(line.tensorboard)
      .tensorboard_histogram_every(line.tensorboard_histograms)
      .profile_steps(step_range(line.profile_steps))
      .profile_trace(line.profile_trace)
      .checkpoint_dir(line.checkpoint_dir)
      .checkpoint_every(line.checkpoint_every)
      .resume(line.resume)
      .overwrite(line.overwrite)
      .run_settings(run_settings(line, distributed::world_size()))
      .model_name(line.model)
      .dataset_name(line.dataset)
      .label_smoothing(program.recipe.label_smoothing)
      .accumulate_steps(line.accumulate)
      .clip_grad_norm(line.clip_grad_norm)
      // A captured step is one whole optimizer step on one batch (the Trainer refuses it with
      // accumulation), so --accumulate > 1 trains eagerly, as on the CPU.
      // ZeRO's step copies the schedule's lr into its wrapped optimizer, which a replay skips.
      .cuda_graph(line.cuda_graph == "on" && line.accumulate == 1 && line.zero == 0)
      .precision(line.precision == "fp16"   ? kFloat16
                 : line.precision == "bf16" ? kBFloat16
                                            : kFloat32);
  train::Trainer trainer(model, *optimizer, train_loader, test_loader, options);
  if (plateau_schedule)
    trainer.set_scheduler(plateau_schedule.get());
  else
    trainer.set_scheduler(step_schedule.get());
  logger().info(
      "{}: {} on {} ({} training, {} test images), {} epochs of {} steps, batch {} x "
      "{} ranks, {}",
      program.name, line.model, line.dataset, train_set->size(), test_set->size(), line.epochs,
      train_loader.num_batches(), line.batch_size, distributed::world_size(), device.str());
  const train::TrainingResult result = trainer.fit();

  if (result.stop_signal) {
    const std::string where = result.last_checkpoint.empty()
                                  ? std::string("no checkpoint was written (no --checkpoint-dir)")
                                  : "checkpoint saved to " + result.last_checkpoint.string() +
                                        "; continue with --resume auto";
    std::fprintf(stderr, "%s: stopped by %s after step %lld; %s\n", program.name.c_str(),
                 train::signal_name(*result.stop_signal).c_str(),
                 static_cast<long long>(result.steps), where.c_str());
    return 128 + *result.stop_signal;
  }
  if (main_rank) print_summary(line, device, result);
  return 0;
}

}  // namespace

int run_trainer_program(const TrainerProgram& program, int argc, char** argv) {
  CLI::App app(program.description, program.name);
  CommandLine line;
  define_options(app, line, program);
  try {
    app.parse(argc, argv);
    // "--nesterov --no-nesterov" contradicts itself (CLI11 would let the last one win).
    if (app.get_option("--nesterov")->count() > 1)
      throw CLI::ValidationError("--nesterov", "give one of --nesterov and --no-nesterov, once");
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "%s: usage error: %s\nRun %s --help for the options.\n",
                 program.name.c_str(), error.what(), program.name.c_str());
    return 2;
  }
  try {
    return train(program, line);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s: usage error: %s\n", program.name.c_str(), error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: error: %s\n", program.name.c_str(), error.what());
    return 1;
  }
}

}  // namespace minidl::tools
