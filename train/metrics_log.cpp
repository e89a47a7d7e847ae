#include "minidl/train/metrics_log.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "minidl/core/error.h"

namespace minidl::train {

namespace fs = std::filesystem;

std::string to_json(const EpochMetrics& metrics) {
  nlohmann::ordered_json object;
  object["epoch"] = metrics.epoch;
  object["step"] = metrics.step;
  object["lr"] = metrics.lr;
  object["train_loss"] = metrics.train_loss;
  object["test_loss"] = metrics.test_loss;
  object["test_accuracy"] = metrics.test_accuracy;
  object["images_per_sec"] = metrics.images_per_sec;
  object["seconds"] = metrics.seconds;
  object["precision"] = metrics.precision;
  return object.dump();
}

namespace {

// The lines of `path` whose "epoch" is at most keep_epochs (a missing file has none).
std::vector<std::string> kept_lines(const fs::path& path, int64_t keep_epochs) {
  std::vector<std::string> kept;
  std::ifstream in(path);
  std::string line;
  while (keep_epochs > 0 && std::getline(in, line)) {
    const nlohmann::json object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (object.is_object() && object.contains("epoch") && object["epoch"].is_number_integer() &&
        object["epoch"].get<int64_t>() <= keep_epochs)
      kept.push_back(line);
  }
  return kept;
}

}  // namespace

MetricsLog::MetricsLog(const fs::path& path, int64_t keep_epochs) : path_(path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const std::vector<std::string> kept = kept_lines(path, keep_epochs);
  out_.open(path, std::ios::out | std::ios::trunc);
  MINIDL_CHECK(out_.good(), "metrics file ", path.string(), ": cannot open it for writing");
  for (const std::string& line : kept) out_ << line << '\n';
  out_.flush();
}

void MetricsLog::append(const EpochMetrics& metrics) {
  out_ << to_json(metrics) << '\n';
  out_.flush();
  MINIDL_CHECK(out_.good(), "metrics file ", path_.string(), ": writing failed");
}

}  // namespace minidl::train
