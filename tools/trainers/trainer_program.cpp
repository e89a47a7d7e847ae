#include "tools/trainers/trainer_program.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "minidl.h"

namespace minidl::tools {

namespace {

namespace fs = std::filesystem;

// Everything the command line sets.
struct CommandLine {
  std::string data_dir;
  std::string dataset;
  std::string model;
  int64_t epochs = 0;
  int64_t batch_size = 0;
  double lr = 0;
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;
  std::string schedule;
  double warmup_epochs = 0;
  std::string device = "auto";
  std::string precision = "fp32";
  std::string cuda_graph = "on";
  int workers = 1;
  uint64_t seed = 0;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 1;
  std::string resume;
  std::string metrics;
  int64_t max_steps = 0;
  int64_t limit_train = 0;
  int64_t limit_test = 0;
  int64_t log_every = 100;
  std::string log_level = "info";
  bool no_progress = false;
};

// A mistake in the command line: exit status 2.
struct UsageError : Error {
  using Error::Error;
};

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
      ->check(CLI::IsMember(program.datasets))->capture_default_str();
  app.add_option("--model", line.model, "Model to train")
      ->check(CLI::IsMember(program.models))->capture_default_str();
  app.add_option("--epochs", line.epochs, "Epochs to train")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch-size", line.batch_size, "Images per step (per rank)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lr", line.lr, "Peak learning rate")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--momentum", line.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_flag("--nesterov,!--no-nesterov", line.nesterov, "Nesterov momentum")
      ->capture_default_str();
  app.add_option("--weight-decay", line.weight_decay, "L2 weight decay")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--schedule", line.schedule,
                 "Learning-rate schedule over all steps: step (x0.1 at 50% and 75%), cosine "
                 "(down to 0) or onecycle (warm up to --lr, then down)")
      ->check(CLI::IsMember({"step", "cosine", "onecycle"}))->capture_default_str();
  app.add_option("--warmup-epochs", line.warmup_epochs,
                 "Linear warm-up from 0.1x the learning rate over this many epochs (step and "
                 "cosine schedules)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--device", line.device, "Where to train: auto takes a GPU when there is one")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))->capture_default_str();
  app.add_option("--precision", line.precision,
                 "fp32, or mixed precision: bf16, or fp16 with dynamic loss scaling")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))->capture_default_str();
  app.add_option("--cuda-graph", line.cuda_graph,
                 "Replay the training step from a CUDA graph (GPU, one process, no dropout; "
                 "ignored elsewhere)")
      ->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  app.add_option("--workers", line.workers, "Data-loader worker threads (0: the main thread)")
      ->check(CLI::Range(0, 64))->capture_default_str();
  app.add_option("--seed", line.seed, "Seed of the initial weights, the shuffle and the "
                 "augmentation")->capture_default_str();
  app.add_option("--checkpoint-dir", line.checkpoint_dir,
                 "Where checkpoints are written (the 3 newest are kept); empty: none")
      ->capture_default_str();
  app.add_option("--checkpoint-every", line.checkpoint_every,
                 "Write a checkpoint every N epochs, and always at the end")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--resume", line.resume,
                 "Continue from this checkpoint file, or from the newest in --checkpoint-dir with "
                 "'auto'");
  app.add_option("--metrics", line.metrics, "Append one JSON object per epoch to this file");
  app.add_option("--max-steps", line.max_steps, "Stop after this many steps (0: no limit)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--limit-train", line.limit_train,
                 "Train on the first N training images only (0: all)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--limit-test", line.limit_test, "Evaluate on the first N test images only (0: all)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--log-every", line.log_every,
                 "Steps between progress lines when stdout is not a terminal")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--log-level", line.log_level, "Logging level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_flag("--no-progress", line.no_progress,
               "No progress lines inside an epoch (the line after each epoch stays)");
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

Device choose_device(const std::string& choice) {
  if (choice == "cpu") return Device(kCPU);
  if (choice == "cuda") {
    MINIDL_CHECK(cuda::is_available(), "--device cuda: ",
                 cuda::is_built() ? "no CUDA device is visible"
                                  : "this build of minidl has no CUDA backend",
                 "; use --device cpu (or auto)");
    return Device(kCUDA, cuda::current_device());  // distributed::init chose it by local rank
  }
  return cuda::is_available() ? Device(kCUDA, cuda::current_device()) : Device(kCPU);
}

std::unique_ptr<optim::LRScheduler> make_schedule(const CommandLine& line,
                                                  optim::Optimizer& optimizer,
                                                  int64_t steps_per_epoch) {
  int64_t total_steps = line.epochs * steps_per_epoch;
  if (line.max_steps > 0) total_steps = std::min(total_steps, line.max_steps);
  total_steps = std::max<int64_t>(total_steps, 1);
  if (line.schedule == "onecycle")
    return std::make_unique<optim::OneCycleLR>(optimizer,
                                               optim::OneCycleLROptions(line.lr, total_steps));
  std::unique_ptr<optim::LRScheduler> schedule;
  if (line.schedule == "cosine")
    schedule = std::make_unique<optim::CosineAnnealingLR>(optimizer, total_steps);
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
                   const distributed::TrainingResult& result) {
  nlohmann::ordered_json summary;
  summary["model"] = line.model;
  summary["dataset"] = line.dataset;
  summary["epochs"] = result.epochs;
  summary["steps"] = result.steps;
  summary["test_accuracy"] = result.test.accuracy;
  summary["test_loss"] = result.test.loss;
  summary["train_images_per_sec"] = result.train_images_per_sec;
  summary["wall_seconds"] = result.wall_seconds;
  summary["device"] = device.str();
  summary["precision"] = line.precision;
  summary["cuda_graph"] = result.graph_replays > 0;
  summary["world_size"] = distributed::world_size();
  std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
}

// Options that do not combine.
void check_combinations(const CommandLine& line) {
  if (line.schedule == "onecycle" && line.warmup_epochs > 0)
    throw UsageError("--warmup-epochs does not combine with --schedule onecycle, which warms up "
                     "by itself");
}

int train(const TrainerProgram& program, const CommandLine& line) {
  check_combinations(line);
  distributed::init();  // world size 1 without mpirun
  const bool main_rank = distributed::rank() == 0;
  set_log_level(line.log_level);
  if (!main_rank && log_level() < LogLevel::Warn) set_log_level(LogLevel::Warn);
  const Device device = choose_device(line.device);
  const DatasetSpec spec = dataset_spec(line.dataset);
  const auto train_set = first_samples(read_split(line, data::Split::Train), line.limit_train);
  const auto test_set = first_samples(read_split(line, data::Split::Test), line.limit_test);

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
  data::DataLoader test_loader(test_set, data::DataLoaderOptions(1000)
                                             .num_workers(line.workers)
                                             .device(device)
                                             .augment(data::AugmentOptions().normalize(spec.mean, spec.std)));

  optim::SGD optimizer(model.ptr()->parameters(), optim::SGDOptions(line.lr)
                                                      .momentum(line.momentum)
                                                      .nesterov(line.nesterov)
                                                      .weight_decay(line.weight_decay));
  std::unique_ptr<optim::LRScheduler> schedule =
      make_schedule(line, optimizer, train_loader.num_batches());

  distributed::TrainerOptions options;
  options.epochs(line.epochs)
      .max_steps(line.max_steps)
      .progress(line.no_progress ? distributed::ProgressMode::kNone : distributed::ProgressMode::kAuto)
      .log_every(line.log_every)
      .metrics_path(line.metrics)
      .checkpoint_dir(line.checkpoint_dir)
      .checkpoint_every(line.checkpoint_every)
      .resume(line.resume)
      .model_name(line.model)
      .dataset_name(line.dataset)
      .label_smoothing(program.recipe.label_smoothing)
      .cuda_graph(line.cuda_graph == "on")
      .precision(line.precision == "fp16"   ? kFloat16
                 : line.precision == "bf16" ? kBFloat16
                                            : kFloat32);
  distributed::Trainer trainer(model, optimizer, train_loader, test_loader, options);
  trainer.set_scheduler(schedule.get());
  logger().info("{}: {} on {} ({} training, {} test images), {} epochs of {} steps, batch {} x "
                "{} ranks, {}", program.name, line.model, line.dataset, train_set->size(),
                test_set->size(), line.epochs, train_loader.num_batches(), line.batch_size,
                distributed::world_size(), device.str());
  const distributed::TrainingResult result = trainer.fit();

  if (result.stop_signal) {
    const std::string where = result.last_checkpoint.empty()
                                  ? std::string("no checkpoint was written (no --checkpoint-dir)")
                                  : "checkpoint saved to " + result.last_checkpoint.string() +
                                        "; continue with --resume auto";
    std::fprintf(stderr, "%s: stopped by %s after step %lld; %s\n", program.name.c_str(),
                 distributed::signal_name(*result.stop_signal).c_str(),
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
