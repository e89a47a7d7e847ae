// train_gpt: nanoGPT's GPT (models/gpt.h) on bytes of text, by default Shakespeare's works
// (tools/fetch_shakespeare.sh), with the recipe its PyTorch twin shares (docs/guide/training.md,
// "train_gpt"): AdamW in two groups (weight decay on the matrices only), nanoGPT's warm-up and
// cosine schedule (optim/warmup_cosine_lr.h), clipping at 1.0, an evaluation of 20 validation
// batches every 250 steps, and a generated sample at the end. The run is train::Trainer's with
// the NextToken objective; its "epochs" are eval_interval steps long (Note [Objectives] in
// train/trainer.h), so the evaluation, metrics line and checkpoint of each epoch fall every
// eval_interval steps.
//
// Exit status as train_lenet's (tools/trainers/trainer_program.h): 0 done; 1 an error (one line
// on stderr); 2 a usage error; 128 + the signal number when SIGINT or SIGTERM stopped the run.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "minidl/minidl.h"
#include "minidl/models/gpt.h"
#include "minidl/tools/trainers/command_line.h"

namespace minidl::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kProgram = "train_gpt";
constexpr int64_t kVocabSize = 256;  // bytes (data::ByteTokenizer)
constexpr uint16_t kNewline = '\n';  // the sample starts from a newline, as nanoGPT's sample.py
constexpr double kSampleTemperature = 0.8;
constexpr int64_t kSampleTopK = 40;

// Everything the command line sets; the defaults are the recipe's (about 0.8M parameters).
struct CommandLine : RunOptions {
  std::string data_dir;
  // The model: nanoGPT's GPTConfig.
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t block_size = 128;
  double dropout = 0;
  bool bias = false;
  // The optimisation.
  int64_t batch_size = 32;
  int64_t max_steps = 2000;
  double lr = 1e-3;
  double weight_decay = 0.1;
  int64_t warmup_steps = 100;
  int64_t eval_interval = 250;
  int64_t eval_batches = 20;
  int64_t sample_tokens = 200;

  CommandLine() {  // the run options' defaults of this recipe
    clip_grad_norm = 1.0;
    seed = 1337;  // nanoGPT's
    checkpoint_dir = "runs/train_gpt";
    log_every = 50;
    // A batch is windows of a mapped token file, no work to hand to a thread, and on a CPU run a
    // worker only takes time from the compute threads (2000 steps on 2 cores: 331 s with 0,
    // 341 s with 1; docs/benchmarks.md). PyTorch's DataLoader defaults to 0 workers too.
    workers = 0;
  }
};

void define_options(CLI::App& app, CommandLine& line) {
  app.add_option("--data-dir", line.data_dir,
                 "Folder holding train.bin and val.bin (llm.c token files of bytes; default: "
                 "$MINIDL_SHAKESPEARE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/minidl/shakespeare, "
                 "where tools/fetch_shakespeare.sh puts them)");
  app.add_option("--n-layer", line.n_layer, "Transformer blocks")
      ->transform(integer_in_range<int64_t>(1, 1024))
      ->capture_default_str();
  app.add_option("--n-head", line.n_head, "Attention heads (dividing --n-embd)")
      ->transform(integer_in_range<int64_t>(1, 1024))
      ->capture_default_str();
  app.add_option("--n-embd", line.n_embd, "Width of the residual stream")
      ->transform(integer_in_range<int64_t>(1, 65536))
      ->capture_default_str();
  app.add_option("--block-size", line.block_size, "Tokens of context (the training windows' T)")
      ->transform(integer_in_range<int64_t>(1, 65536))
      ->capture_default_str();
  app.add_option("--dropout", line.dropout,
                 "Dropout probability (above 0, steps run eagerly: no CUDA graph)")
      ->check(finite_in_range(0, 0.99))
      ->capture_default_str();
  // A flag's default does not show in CLI11's help.
  app.add_flag("--bias,!--no-bias", line.bias,
               "Biases in the Linear and LayerNorm layers (default: off, as the recipe)");
  app.add_option("--batch-size", line.batch_size, "Windows per micro-batch (per rank)")
      ->transform(integer_at_least(1))
      ->capture_default_str();
  app.add_option("--max-steps", line.max_steps,
                 "Optimizer steps; the cosine decays to --lr / 10 at the last one")
      ->transform(integer_in_range<int64_t>(1, 1'000'000'000))
      ->capture_default_str();
  app.add_option("--lr", line.lr, "Peak learning rate of AdamW (betas 0.9, 0.99; eps 1e-8)")
      ->check(finite_at_least(0, Bound::kExclusive))
      ->capture_default_str();
  app.add_option("--weight-decay", line.weight_decay,
                 "AdamW's decoupled weight decay of the parameters of 2 or more dimensions "
                 "(the others: none)")
      ->check(finite_at_least(0, Bound::kInclusive))
      ->capture_default_str();
  app.add_option("--warmup-steps", line.warmup_steps,
                 "Linear warm-up steps, from --lr / (N + 1) (nanoGPT's get_lr)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  app.add_option("--eval-interval", line.eval_interval,
                 "Steps between evaluations, metrics lines and checkpoints (and one at the end)")
      ->transform(integer_at_least(1))
      ->capture_default_str();
  app.add_option("--eval-batches", line.eval_batches,
                 "Validation batches per evaluation, from the start of val.bin (0: all)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  app.add_option("--sample-tokens", line.sample_tokens,
                 "Tokens to generate at the end (temperature 0.8, top 40), from a newline")
      ->transform(integer_in_range<int64_t>(0, 1'000'000))
      ->capture_default_str();
  define_run_options(
      app, line,
      {.accumulated = "Micro-batches",
       .seeded = "the initial weights, the training windows, dropout and the sample",
       .resumable = "--checkpoint-dir, --metrics, --tensorboard, --tensorboard-histograms, "
                    "--profile-steps, --profile-trace, "
                    "--workers, --device, --zero, --cuda-graph, --deterministic, "
                    "--cudnn-benchmark, --log-every, --log-level, --no-progress, --sample-tokens "
                    "(--max-steps may not: it sets "
                    "the schedule)",
       .metrics = "per evaluation (every --eval-interval steps)",
       .progress = "between evaluations (the line after each one stays)"});
}

// Options that do not combine.
void check_combinations(const CommandLine& line) {
  if (line.n_embd % line.n_head != 0)
    throw UsageError("--n-embd " + std::to_string(line.n_embd) +
                     " must be a multiple of --n-head " + std::to_string(line.n_head) +
                     " (each head takes n_embd / n_head of the width)");
  if (line.warmup_steps >= line.max_steps)
    throw UsageError("--warmup-steps " + std::to_string(line.warmup_steps) +
                     " must be less than --max-steps " + std::to_string(line.max_steps) +
                     " (the cosine decay runs from the end of the warm-up to the last step)");
}

// Where the token files are: --data-dir, else where tools/fetch_shakespeare.sh puts them.
fs::path data_directory(const CommandLine& line) {
  if (!line.data_dir.empty()) return line.data_dir;
  if (const char* directory = std::getenv("MINIDL_SHAKESPEARE_DIR"); directory && *directory)
    return directory;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return fs::path(cache) / "minidl" / "shakespeare";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : ".") / ".cache" / "minidl" / "shakespeare";
}

// One token file of the run, read and checked against the model's vocabulary and block size.
std::vector<uint16_t> read_tokens(const CommandLine& line, const char* name) {
  const fs::path directory = data_directory(line);
  const fs::path path = directory / name;
  if (!fs::exists(path)) {
    const std::string fetch =
        line.data_dir.empty()
            ? "run tools/fetch_shakespeare.sh (after building prepare_text_tokens) to download "
              "Shakespeare's works and write them there, or pass --data-dir"
            : "make the token files with prepare_text_tokens --out " + directory.string() +
                  " FILE... (any text), or pass another --data-dir";
    throw Error("token file " + path.string() + ": no such file; " + fetch);
  }
  std::vector<uint16_t> tokens = data::read_token_file(path, kVocabSize);
  MINIDL_CHECK(static_cast<int64_t>(tokens.size()) > line.block_size, "token file ", path.string(),
               ": ", tokens.size(), " tokens, too few for one window of ",
               "--block-size + 1 = ", line.block_size + 1, " tokens");
  return tokens;
}

// nanoGPT's configure_optimizers: the parameters of 2 or more dimensions (matrices and
// embeddings) decay, the others (biases, LayerNorm weights) do not; decayed group first. With
// --zero 1 its state is sharded over the ranks in ZeRO-1's reduce-scatter
// form (distributed/zero_redundancy_optimizer.h; the Trainer attaches it to its DDP wrapper).
std::unique_ptr<optim::Optimizer> make_optimizer(const CommandLine& line, const nn::Module& model) {
  std::vector<Tensor> decayed, undecayed;
  for (const auto& item : model.named_parameters())
    (item.value().dim() >= 2 ? decayed : undecayed).push_back(item.value());
  const auto options = optim::AdamWOptions(line.lr).betas({0.9, 0.99}).eps(1e-8);
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, optim::AdamWOptions(options).weight_decay(line.weight_decay));
  if (!undecayed.empty())
    groups.emplace_back(undecayed, optim::AdamWOptions(options).weight_decay(0));
  const auto make = [&options](std::vector<optim::OptimizerParamGroup> local_groups)
      -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<optim::AdamW>(std::move(local_groups), options);
  };
  if (line.zero == 1)
    return std::make_unique<distributed::ZeroRedundancyOptimizer>(
        std::move(groups), make,
        distributed::ZeroRedundancyOptimizerOptions().sharding(
            distributed::ZeroSharding::ReduceScatter));
  return make(std::move(groups));
}

// Random windows; under mpirun each rank takes its share of every epoch's samples.
data::DataLoader make_train_loader(std::shared_ptr<const data::Dataset> train_set,
                                   const data::DataLoaderOptions& options, uint64_t seed) {
  if (distributed::world_size() == 1) return data::DataLoader(std::move(train_set), options);
  auto sampler = std::make_shared<data::DistributedSampler>(
      train_set->size(),
      data::DistributedSamplerOptions(distributed::rank(), distributed::world_size())
          .shuffle(false)  // the windows are random already
          .seed(seed));
  return data::DataLoader(std::move(train_set), std::move(sampler), options);
}

// The settings that define the run, compared with a checkpoint's on resume (train/run_settings.h).
train::RunSettings run_settings(const CommandLine& line, int64_t world_size) {
  return {{"--n-layer", std::to_string(line.n_layer)},
          {"--n-head", std::to_string(line.n_head)},
          {"--n-embd", std::to_string(line.n_embd)},
          {"--block-size", std::to_string(line.block_size)},
          {"--dropout", number_text(line.dropout)},
          {"--bias", line.bias ? "on" : "off"},
          {"--batch-size x ranks", std::to_string(line.batch_size * world_size)},
          {"--max-steps", std::to_string(line.max_steps)},
          {"--lr", number_text(line.lr)},
          {"--weight-decay", number_text(line.weight_decay)},
          {"--warmup-steps", std::to_string(line.warmup_steps)},
          {"--eval-interval", std::to_string(line.eval_interval)},
          {"--eval-batches", std::to_string(line.eval_batches)},
          {"--seed", std::to_string(line.seed)},
          {"--tf32", line.tf32}};
}

// The model's text from a newline, as nanoGPT's sample.py prints it.
std::string generate_sample(models::GPT& model, const CommandLine& line, const Device& device) {
  manual_seed(line.seed + 1);  // the same sample for the same weights, resumed or not
  const Tensor start = full({1, 1}, static_cast<double>(kNewline), TensorOptions(kInt64));
  const Tensor tokens =
      model->generate(start.to(device), line.sample_tokens, kSampleTemperature, kSampleTopK)
          .to(Device(kCPU))
          .contiguous();
  std::vector<uint16_t> values;
  const int64_t* data = tokens.data_ptr<int64_t>();
  for (int64_t i = 1; i < tokens.numel(); ++i) values.push_back(static_cast<uint16_t>(data[i]));
  return data::ByteTokenizer().decode(values);
}

void print_summary(const CommandLine& line, const Device& device, const models::GPT& model,
                   const train::TrainingResult& result) {
  nlohmann::ordered_json summary;
  summary["model"] = "gpt";
  summary["params"] = model->num_params();
  summary["steps"] = result.steps;
  summary["val_loss"] = result.test.loss;
  summary["val_accuracy"] = result.test.accuracy;
  // null when this run trained nothing (it resumed a run that had finished).
  summary["train_loss"] = result.history.empty()
                              ? nlohmann::ordered_json(nullptr)
                              : nlohmann::ordered_json(result.history.back().train_loss);
  summary["tokens_per_sec"] = result.tokens_trained > 0
                                  ? nlohmann::ordered_json(result.train_tokens_per_sec)
                                  : nlohmann::ordered_json(nullptr);
  summary["wall_seconds"] = result.wall_seconds;
  summary["device"] = device.str();
  summary["precision"] = line.precision;
  summary["cuda_graph"] = result.graph_replays > 0;
  summary["world_size"] = distributed::world_size();
  std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
}

int train(const CommandLine& line) {
  check_combinations(line);
  distributed::init();  // world size 1 without mpirun
  const int64_t world_size = distributed::world_size();
  const bool main_rank = distributed::rank() == 0;
  if (main_rank) check_outputs(line.checkpoint_dir, line.resume, line.overwrite, line.metrics);
  set_log_level(line.log_level);
  if (!main_rank && log_level() < LogLevel::Warn) set_log_level(LogLevel::Warn);
  const Device device = choose_device(line.device);
  apply_numerics_options(line);

  const std::vector<uint16_t> train_tokens = read_tokens(line, data::kTrainTokenFileName);
  const std::vector<uint16_t> val_tokens = read_tokens(line, data::kValidationTokenFileName);

  manual_seed(line.seed);
  models::GPT model(models::GPTOptions()
                        .vocab_size(kVocabSize)
                        .block_size(line.block_size)
                        .n_layer(line.n_layer)
                        .n_head(line.n_head)
                        .n_embd(line.n_embd)
                        .dropout(line.dropout)
                        .bias(line.bias));
  model->to(device);

  // An epoch is eval_interval optimizer steps (Note [Objectives] in train/trainer.h): that many
  // global batches of random windows.
  const int64_t windows_per_step = line.batch_size * line.accumulate * world_size;
  auto train_set = std::make_shared<data::TokenWindowDataset>(
      train_tokens, data::TokenWindowOptions(line.block_size)
                        .seed(line.seed)
                        .epoch_size(line.eval_interval * windows_per_step));
  auto val_set = std::make_shared<data::TokenWindowDataset>(
      val_tokens,
      data::TokenWindowOptions(line.block_size).placement(data::WindowPlacement::Consecutive));
  const auto loader_options =
      data::DataLoaderOptions(line.batch_size).num_workers(line.workers).device(device);
  data::DataLoader train_loader = make_train_loader(train_set, loader_options, line.seed);
  data::DataLoader val_loader(val_set, loader_options);

  const std::unique_ptr<optim::Optimizer> optimizer = make_optimizer(line, *model.ptr());
  optim::WarmupCosineLR schedule(*optimizer, line.warmup_steps, line.max_steps, line.lr / 10);

  const int64_t epochs = (line.max_steps + line.eval_interval - 1) / line.eval_interval;
  train::TrainerOptions options;
  options.epochs(epochs)
      .max_steps(line.max_steps)
      .objective(std::make_shared<train::NextToken>())
      .eval_batches(line.eval_batches)
      .progress(line.no_progress ? train::ProgressMode::kNone : train::ProgressMode::kAuto)
      .log_every(line.log_every)
      .metrics_path(line.metrics)
      .tensorboard_dir(line.tensorboard)
      .tensorboard_histogram_every(line.tensorboard_histograms)
      .profile_steps(step_range(line.profile_steps))
      .profile_trace(line.profile_trace)
      .checkpoint_dir(line.checkpoint_dir)
      .resume(line.resume)
      .overwrite(line.overwrite)
      .run_settings(run_settings(line, world_size))
      .model_name("gpt")
      .dataset_name("text-bytes")
      .accumulate_steps(line.accumulate)
      .clip_grad_norm(line.clip_grad_norm)
      // A captured step is one whole optimizer step on one batch (the Trainer refuses it with
      // accumulation), so --accumulate > 1 trains eagerly, as on the CPU; and a replay cannot
      // draw new dropout masks, which the attention's functional dropout draws inside
      // scaled_dot_product_attention.
      .cuda_graph(line.cuda_graph == "on" && line.accumulate == 1 && line.dropout == 0 &&
                  line.zero == 0)
      .precision(line.precision == "fp16"   ? kFloat16
                 : line.precision == "bf16" ? kBFloat16
                                            : kFloat32);
  train::Trainer trainer(model, *optimizer, train_loader, val_loader, options);
  trainer.set_scheduler(&schedule);
  logger().info(
      "{}: GPT of {} parameters ({} layers, {} heads, {} wide, block {}) on {} ({} training, {} "
      "validation tokens), {} steps, batch {} x {} x {} ranks, {}",
      kProgram, model->num_params(), line.n_layer, line.n_head, line.n_embd, line.block_size,
      data_directory(line).string(), train_tokens.size(), val_tokens.size(), line.max_steps,
      line.batch_size, line.accumulate, world_size, device.str());
  const train::TrainingResult result = trainer.fit();

  if (result.stop_signal) {
    const std::string where = result.last_checkpoint.empty()
                                  ? std::string("no checkpoint was written (no --checkpoint-dir)")
                                  : "checkpoint saved to " + result.last_checkpoint.string() +
                                        "; continue with --resume auto";
    std::fprintf(stderr, "%s: stopped by %s after step %lld; %s\n", kProgram,
                 train::signal_name(*result.stop_signal).c_str(),
                 static_cast<long long>(result.steps), where.c_str());
    return 128 + *result.stop_signal;
  }
  if (!main_rank) return 0;
  if (line.sample_tokens > 0)
    std::printf("---- sample ----\n%s\n----\n", generate_sample(model, line, device).c_str());
  print_summary(line, device, model, result);
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app(
      "Trains nanoGPT's GPT on bytes of text (Shakespeare's works by default) with AdamW, a "
      "warm-up and cosine schedule and clipping, and prints a sample.",
      kProgram);
  CommandLine line;
  define_options(app, line);
  try {
    app.parse(argc, argv);
    if (app.get_option("--bias")->count() > 1)
      throw CLI::ValidationError("--bias", "give one of --bias and --no-bias, once");
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "%s: usage error: %s\nRun %s --help for the options.\n", kProgram,
                 error.what(), kProgram);
    return 2;
  }
  try {
    return train(line);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s: usage error: %s\n", kProgram, error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, error.what());
    return 1;
  }
}

}  // namespace
}  // namespace minidl::tools

int main(int argc, char** argv) { return minidl::tools::run(argc, argv); }
