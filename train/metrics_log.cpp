#include "minidl/train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "minidl/core/error.h"
#include "minidl/train/output_paths.h"

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
  if (metrics.tokens_per_sec > 0) object["tokens_per_sec"] = metrics.tokens_per_sec;
  object["seconds"] = metrics.seconds;
  object["precision"] = metrics.precision;
  return object.dump();
}

namespace {

// What to_json writes first: a line that begins so but does not parse is one of ours that a
// killed process left half-written, not somebody else's data.
constexpr std::string_view kLineStart = R"({"epoch":)";

bool is_metrics_line(const std::string& line) {
  const nlohmann::json object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return line.rfind(kLineStart, 0) == 0;
  return object.is_object() && object.contains("epoch") && object["epoch"].is_number_integer() &&
         object.contains("step") && object["step"].is_number_integer() &&
         object.contains("test_accuracy") && object["test_accuracy"].is_number();
}

// The first line of `path` that is not a metrics line (at most 60 characters of it) and its
// number, or nullopt when every line is one.
std::optional<std::pair<int64_t, std::string>> first_foreign_line(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty() || is_metrics_line(line)) continue;
    std::string shown;
    for (char c : line.substr(0, 60))
      shown += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    return std::make_pair(number, shown + (line.size() > 60 ? "..." : ""));
  }
  return std::nullopt;
}

bool ends_with_newline(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() <= 0) return true;
  in.seekg(-1, std::ios::end);
  return in.get() == '\n';
}

}  // namespace

void check_metrics_file(const fs::path& path, std::string_view option) {
  check_writable_file(path, option);
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return;  // created by the run
  const auto foreign = first_foreign_line(path);
  MINIDL_CHECK(!foreign, option, " ", path.string(),
               ": the file exists and is not a metrics file (line ", foreign->first, " is \"",
               foreign->second,
               "\", not a JSON object with \"epoch\", \"step\" and \"test_accuracy\"); a run "
               "only appends to a metrics file, so it leaves this one alone: give another path");
}

MetricsLog::MetricsLog(const fs::path& path, std::string_view option) : path_(path) {
  check_metrics_file(path, option);
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const bool starts_a_line = ends_with_newline(path);
  file_ = std::fopen(path.c_str(), "a");
  MINIDL_CHECK(file_ != nullptr, option, " ", path.string(), ": cannot open it for appending (",
               std::strerror(errno), ")");
  // A line a killed run left half-written stays on a line of its own.
  if (!starts_a_line) std::fputc('\n', file_);
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::append(const EpochMetrics& metrics) {
  const std::string line = to_json(metrics) + '\n';
  errno = 0;
  const bool written =
      std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  const int error = errno;
  if (!written) std::clearerr(file_);
  MINIDL_CHECK(written, "metrics file ", path_.string(), ": writing epoch ", metrics.epoch,
               "'s line failed (", error != 0 ? std::strerror(error) : "unknown error", ")");
}

}  // namespace minidl::train
