#include "minidl/train/training_checkpoint.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "minidl/core/atomic_file.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/optim/scalar_map.h"

namespace minidl::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kLossSumName = "trainer.train_loss_sum";

// checkpoint-<step>.safetensors (checkpoint_path), the step captured.
const std::regex& checkpoint_name() {
  static const std::regex name(R"(checkpoint-(\d+)\.safetensors)");
  return name;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// Metadata `key` of checkpoint `path`, which must be there.
const std::string& required(const serialize::SafetensorsMetadata& metadata, const std::string& key,
                            const fs::path& path) {
  const auto found = metadata.find(key);
  MINIDL_CHECK(found != metadata.end(), "checkpoint ", path.string(), ": expected the entry \"",
               key,
               "\" in its metadata, found none (the file is damaged or not a training "
               "checkpoint)");
  return found->second;
}

uint64_t parse_unsigned(const std::string& text, const std::string& key, const fs::path& path) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  MINIDL_CHECK(error == std::errc() && end == text.data() + text.size(), "checkpoint ",
               path.string(), ": expected a non-negative integer for \"", key, "\", found \"", text,
               "\"");
  return value;
}

int64_t parse_count(const serialize::SafetensorsMetadata& metadata, const std::string& key,
                    const fs::path& path) {
  const uint64_t value = parse_unsigned(required(metadata, key, path), key, path);
  MINIDL_CHECK(value <= static_cast<uint64_t>(INT64_MAX), "checkpoint ", path.string(), ": \"", key,
               "\" = ", value, " is out of range");
  return static_cast<int64_t>(value);
}

// The shortest decimal that reads back as exactly `value`.
std::string shortest_decimal(double value) {
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  MINIDL_INTERNAL_ASSERT(error == std::errc(), "formatting ", value);
  return std::string(text, end);
}

// The "run_settings" entry: a JSON object whose values are strings.
RunSettings run_settings_from_json(const std::string& text, const fs::path& path) {
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  MINIDL_CHECK(object.is_object(), "checkpoint ", path.string(),
               ": expected a JSON object for \"run_settings\", found \"", text, "\"");
  RunSettings settings;
  for (const auto& [name, value] : object.items()) {
    MINIDL_CHECK(value.is_string(), "checkpoint ", path.string(), ": expected the run setting \"",
                 name, "\" as a string, found ", value.dump());
    settings[name] = value.get<std::string>();
  }
  return settings;
}

double parse_number(const std::string& text, const std::string& key, const fs::path& path) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  MINIDL_CHECK(error == std::errc() && end == text.data() + text.size(), "checkpoint ",
               path.string(), ": expected a number for \"", key, "\", found \"", text, "\"");
  return value;
}

// CRC-32 (zlib's) of a contiguous CPU tensor's bytes, as 8 hex digits.
std::string crc32_of(const Tensor& t) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* bytes = static_cast<const Bytef*>(t.data_ptr());
  // zlib takes at most UINT_MAX bytes a call.
  for (size_t done = 0, total = t.nbytes(); done < total;) {
    const auto chunk = static_cast<uInt>(std::min<size_t>(total - done, 1u << 30));
    crc = crc32(crc, bytes + done, chunk);
    done += chunk;
  }
  char text[9];
  std::snprintf(text, sizeof text, "%08lx", static_cast<unsigned long>(crc));
  return text;
}

// Every tensor's bytes against the "tensor_crc32" entry (a JSON object of tensor names and
// CRC-32s; checkpoints written before it have none and are not checked): a flipped bit is an
// error naming the tensor, where safetensors itself would load it.
void verify_checksums(const serialize::SafetensorsContents& contents, const fs::path& path) {
  const auto entry = contents.metadata.find("tensor_crc32");
  if (entry == contents.metadata.end()) return;
  const nlohmann::json recorded =
      nlohmann::json::parse(entry->second, nullptr, /*allow_exceptions=*/false);
  MINIDL_CHECK(recorded.is_object(), "checkpoint ", path.string(),
               ": expected a JSON object for \"tensor_crc32\", found \"", entry->second, "\"");
  MINIDL_CHECK(recorded.size() == contents.tensors.size(), "checkpoint ", path.string(),
               ": it records the CRC-32 of ", recorded.size(), " tensors but holds ",
               contents.tensors.size(), " (the file is damaged)");
  for (const auto& [name, tensor] : contents.tensors) {
    const auto expected = recorded.find(name);
    MINIDL_CHECK(expected != recorded.end() && expected->is_string(), "checkpoint ", path.string(),
                 ": no CRC-32 recorded for its tensor \"", name, "\" (the file is damaged)");
    const std::string found = crc32_of(tensor);
    MINIDL_CHECK(found == expected->get<std::string>(), "checkpoint ", path.string(),
                 ": the bytes of its tensor \"", name, "\" have the CRC-32 ", found,
                 ", but the checkpoint recorded ", expected->get<std::string>(),
                 " when it was written: the file is damaged");
  }
}

// A file named checkpoint-<step>.safetensors must hold that step: one renamed by hand would
// otherwise be taken for another point of the run (the newest, forever, by resume auto).
void check_name_matches_step(const serialize::SafetensorsMetadata& metadata, const fs::path& path) {
  const std::string name = path.filename().string();
  std::smatch match;
  if (!std::regex_match(name, match, checkpoint_name())) return;
  const std::string& step = required(metadata, "step", path);
  uint64_t named = 0;
  const std::string digits = match[1].str();
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), named);
  MINIDL_CHECK(error == std::errc() && std::to_string(named) == step, "checkpoint ", path.string(),
               ": its name says step ", digits, ", but it holds step ", step, " (was it renamed?)");
}

}  // namespace

void save_training_checkpoint(const fs::path& path, const nn::Module& model,
                              const optim::Optimizer& optimizer,
                              const optim::CheckpointableScheduler* scheduler,
                              const TrainingCheckpoint& checkpoint) {
  serialize::NamedTensorList tensors;
  for (const auto& item : model.state_dict())
    tensors.emplace_back(kModelPrefix + item.key(), item.value());
  const optim::OptimizerStateDict optimizer_state = optimizer.state_dict();
  for (auto& entry : optimizer_state.tensors(kOptimizerPrefix)) tensors.push_back(entry);
  MINIDL_CHECK(checkpoint.train_loss_sum.defined() && checkpoint.train_loss_sum.numel() == 1 &&
                   checkpoint.train_loss_sum.dtype() == kFloat32,
               "save_training_checkpoint: expected train_loss_sum as a float32 scalar");
  tensors.emplace_back(kLossSumName, checkpoint.train_loss_sum);

  serialize::SafetensorsMetadata metadata;
  metadata["format"] = kTrainingCheckpointFormat;
  metadata["model"] = checkpoint.model;
  metadata["dataset"] = checkpoint.dataset;
  metadata["epoch"] = std::to_string(checkpoint.epoch);
  metadata["batch"] = std::to_string(checkpoint.batch);
  metadata["step"] = std::to_string(checkpoint.step);
  metadata["generator_seed"] = std::to_string(checkpoint.generator.seed);
  metadata["generator_offset"] = std::to_string(checkpoint.generator.offset);
  metadata["optimizer"] = optim::to_json(optimizer_state.scalars());
  if (scheduler != nullptr) metadata["scheduler"] = optim::to_json(scheduler->state_dict());
  metadata["train_samples"] = std::to_string(checkpoint.train_samples);
  metadata["world_size"] = std::to_string(checkpoint.world_size);
  metadata["precision"] = checkpoint.precision;
  if (checkpoint.grad_scaler) metadata["grad_scaler"] = optim::to_json(*checkpoint.grad_scaler);
  metadata["accumulate_steps"] = std::to_string(checkpoint.accumulate_steps);
  metadata["clip_grad_norm"] = shortest_decimal(checkpoint.clip_grad_norm);
  metadata["run_settings"] = nlohmann::json(checkpoint.run_settings).dump();
  nlohmann::json checksums = nlohmann::json::object();
  for (const auto& [name, tensor] : tensors)
    checksums[name] = crc32_of(tensor.to(kCPU).contiguous());
  metadata["tensor_crc32"] = checksums.dump();
  serialize::write_safetensors(path, tensors, metadata);
}

namespace {

// The format entry of a checkpoint's metadata, checked.
void check_format(const serialize::SafetensorsMetadata& metadata, const fs::path& path) {
  const auto format = metadata.find("format");
  MINIDL_CHECK(format != metadata.end() && format->second == kTrainingCheckpointFormat,
               "checkpoint ", path.string(), ": expected a training checkpoint (format \"",
               kTrainingCheckpointFormat, "\"), found ",
               format == metadata.end() ? std::string("no format entry (a model file saved by "
                                                      "nn::save, or another program's file?)")
                                        : "format \"" + format->second + "\"");
}

}  // namespace

void check_training_checkpoint_file(const fs::path& path) {
  const serialize::SafetensorsContents contents = serialize::read_safetensors(path);
  check_format(contents.metadata, path);
  check_name_matches_step(contents.metadata, path);
  verify_checksums(contents, path);
}

TrainingCheckpoint load_training_checkpoint(const fs::path& path, nn::Module& model,
                                            optim::Optimizer& optimizer,
                                            optim::CheckpointableScheduler* scheduler,
                                            const std::string& expected_model,
                                            const std::string& expected_dataset,
                                            const RunSettings& expected_settings) {
  serialize::SafetensorsContents contents = serialize::read_safetensors(path);
  const serialize::SafetensorsMetadata& metadata = contents.metadata;
  check_format(metadata, path);
  check_name_matches_step(metadata, path);
  verify_checksums(contents, path);

  TrainingCheckpoint checkpoint;
  checkpoint.model = required(metadata, "model", path);
  checkpoint.dataset = required(metadata, "dataset", path);
  MINIDL_CHECK(checkpoint.model == expected_model, "checkpoint ", path.string(),
               " holds the model \"", checkpoint.model, "\", but this run trains \"",
               expected_model, "\"; resume with the same model or start afresh");
  MINIDL_CHECK(checkpoint.dataset == expected_dataset, "checkpoint ", path.string(),
               " was trained on \"", checkpoint.dataset, "\", but this run trains on \"",
               expected_dataset, "\"; resume on the same dataset or start afresh");
  // Before anything is loaded: an optimizer of another kind would fail there, saying less.
  if (const auto settings = metadata.find("run_settings"); settings != metadata.end())
    checkpoint.run_settings = run_settings_from_json(settings->second, path);
  const std::vector<std::string> differences =
      differing_settings(checkpoint.run_settings, expected_settings);
  if (!differences.empty()) {
    std::string listed;
    for (const std::string& difference : differences)
      listed += (listed.empty() ? "" : "; ") + difference;
    throw Error("checkpoint " + path.string() + " was trained with other settings than this " +
                "run's: " + listed +
                ". Resume with the settings it was trained with, or start a new run in another "
                "folder");
  }
  checkpoint.epoch = parse_count(metadata, "epoch", path);
  checkpoint.batch = parse_count(metadata, "batch", path);
  checkpoint.step = parse_count(metadata, "step", path);
  checkpoint.generator.seed =
      parse_unsigned(required(metadata, "generator_seed", path), "generator_seed", path);
  checkpoint.generator.offset =
      parse_unsigned(required(metadata, "generator_offset", path), "generator_offset", path);
  const optim::ScalarMap optimizer_scalars = optim::scalar_map_from_json(
      required(metadata, "optimizer", path), "checkpoint " + path.string() + " optimizer");
  std::optional<optim::ScalarMap> scheduler_state;
  if (scheduler != nullptr)
    scheduler_state = optim::scalar_map_from_json(required(metadata, "scheduler", path),
                                                  "checkpoint " + path.string() + " scheduler");
  checkpoint.train_samples = parse_count(metadata, "train_samples", path);
  // Written since data-parallel checkpoints were; a checkpoint without it is of one process.
  checkpoint.world_size =
      metadata.count("world_size") ? parse_count(metadata, "world_size", path) : 1;
  MINIDL_CHECK(checkpoint.world_size >= 1, "checkpoint ", path.string(),
               ": expected \"world_size\" >= 1, found ", checkpoint.world_size);
  checkpoint.precision = required(metadata, "precision", path);
  if (const auto scaler = metadata.find("grad_scaler"); scaler != metadata.end())
    checkpoint.grad_scaler =
        optim::scalar_map_from_json(scaler->second, "checkpoint " + path.string() + " grad_scaler");
  // Written since the options existed; a checkpoint without them was trained without either.
  if (metadata.count("accumulate_steps"))
    checkpoint.accumulate_steps = parse_count(metadata, "accumulate_steps", path);
  if (const auto clip = metadata.find("clip_grad_norm"); clip != metadata.end())
    checkpoint.clip_grad_norm = parse_number(clip->second, "clip_grad_norm", path);

  nn::Module::NamedTensors model_state("Tensor name");
  serialize::NamedTensorList optimizer_tensors;
  for (auto& [name, tensor] : contents.tensors) {
    if (starts_with(name, kModelPrefix))
      model_state.insert(name.substr(std::char_traits<char>::length(kModelPrefix)), tensor);
    else if (starts_with(name, kOptimizerPrefix))
      optimizer_tensors.emplace_back(name, tensor);
    else if (name == kLossSumName)
      checkpoint.train_loss_sum = tensor;
    else
      MINIDL_CHECK(false, "checkpoint ", path.string(), ": unexpected tensor \"", name,
                   "\" (expected names starting with model. or optimizer., or ", kLossSumName, ")");
  }
  MINIDL_CHECK(checkpoint.train_loss_sum.defined() && checkpoint.train_loss_sum.numel() == 1 &&
                   checkpoint.train_loss_sum.dtype() == kFloat32,
               "checkpoint ", path.string(), ": expected the float32 scalar ", kLossSumName);
  try {
    const optim::OptimizerStateDict optimizer_state = optim::OptimizerStateDict::from_flat(
        optimizer_tensors, optimizer_scalars, kOptimizerPrefix);
    model.load_state_dict(model_state, /*strict=*/true);
    optimizer.load_state_dict(optimizer_state);
    if (scheduler != nullptr) scheduler->load_state_dict(*scheduler_state);
  } catch (const Error& error) {
    throw Error("checkpoint " + path.string() + ": " + error.what());
  }
  return checkpoint;
}

fs::path checkpoint_path(const fs::path& directory, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint-%09lld.safetensors", static_cast<long long>(step));
  return directory / name;
}

std::vector<fs::path> list_checkpoints(const fs::path& directory) {
  std::vector<std::pair<uint64_t, fs::path>> found;
  std::error_code error;
  if (!fs::is_directory(directory, error)) return {};
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (!entry.is_regular_file() || !std::regex_match(name, match, checkpoint_name())) continue;
    const std::string digits = match[1].str();
    uint64_t step = 0;
    const auto [end, parse_error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (parse_error != std::errc()) {  // more digits than any run's steps: not minidl's
      logger().warn(
          "{}: skipping it: its step number has {} digits, more than a checkpoint of "
          "minidl's can have",
          entry.path().string(), digits.size());
      continue;
    }
    found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& [step, path] : found) paths.push_back(std::move(path));
  return paths;
}

std::optional<fs::path> newest_checkpoint(const fs::path& directory) {
  std::vector<fs::path> paths = list_checkpoints(directory);
  if (paths.empty()) return std::nullopt;
  return paths.back();
}

void prune_checkpoints(const fs::path& directory, int64_t keep) {
  const std::vector<fs::path> paths = list_checkpoints(directory);
  const int64_t excess = static_cast<int64_t>(paths.size()) - std::max<int64_t>(keep, 1);
  for (int64_t i = 0; i < excess; ++i) fs::remove(paths[static_cast<size_t>(i)]);
}

std::vector<fs::path> remove_stale_temporaries(const fs::path& directory) {
  std::vector<fs::path> removed;
  std::error_code error;
  if (!fs::is_directory(directory, error)) return removed;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    const std::optional<AtomicTemporaryName> temporary =
        parse_atomic_temporary_name(entry.path().filename().string());
    if (!entry.is_regular_file() || !temporary ||
        !std::regex_match(temporary->target_name, checkpoint_name()))
      continue;
    // A pid too large for pid_t belongs to no process.
    const std::optional<pid_t> pid = temporary->pid;
    const bool owner_alive =
        pid && *pid > 0 && *pid != ::getpid() && (::kill(*pid, 0) == 0 || errno == EPERM);
    if (owner_alive) continue;
    if (fs::remove(entry.path(), error)) removed.push_back(entry.path());
  }
  return removed;
}

}  // namespace minidl::train
