#include "minidl/tools/trainers/command_line.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <vector>

#include "minidl/minidl.h"

namespace minidl::tools {

namespace fs = std::filesystem;

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);  // 0, 0.5, 1000000
  return text;
}

std::string refusal(const std::string& expected, const std::string& text) {
  return "expected " + expected + ", got " + (text.empty() ? std::string("nothing") : text);
}

CLI::Validator integer_at_least(int64_t min) {
  const std::string bound = ">= " + std::to_string(min);
  const std::string label = min == 0 ? "NONNEGATIVE" : min == 1 ? "POSITIVE" : bound;
  return integer_validator<int64_t>(min, std::numeric_limits<int64_t>::max(), "an integer " + bound,
                                    label);
}

namespace {

// A finite number above min (or equal to it, with Bound::kInclusive) and at most max.
CLI::Validator finite_validator(double min, Bound bound, double max, const std::string& expected,
                                const std::string& label) {
  auto validate = [=](std::string& text) -> std::string {
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    const bool above_min = bound == Bound::kInclusive ? value >= min : value > min;
    if (error != std::errc() || stop != end || !std::isfinite(value) || !above_min || value > max)
      return refusal(expected, text);
    return {};
  };
  return CLI::Validator(validate, label);
}

}  // namespace

CLI::Validator finite_at_least(double min, Bound bound) {
  const bool inclusive = bound == Bound::kInclusive;
  const std::string relation = (inclusive ? ">= " : "> ") + number_text(min);
  const std::string label = min != 0 ? relation : inclusive ? "NONNEGATIVE" : "POSITIVE";
  return finite_validator(min, bound, std::numeric_limits<double>::max(),
                          "a finite number " + relation, label);
}

CLI::Validator finite_in_range(double min, double max) {
  return finite_validator(min, Bound::kInclusive, max,
                          "a number from " + number_text(min) + " to " + number_text(max),
                          "[" + number_text(min) + " - " + number_text(max) + "]");
}

Device choose_device(const std::string& choice) {
  if (choice == "cpu") return Device(kCPU);
  if (choice == "cuda") {
    MINIDL_CHECK(
        cuda::is_available(), "--device cuda: ",
        cuda::is_built() ? "no CUDA device is visible" : "this build of minidl has no CUDA backend",
        "; use --device cpu (or auto)");
    return Device(kCUDA, cuda::current_device());  // distributed::init chose it by local rank
  }
  return cuda::is_available() ? Device(kCUDA, cuda::current_device()) : Device(kCPU);
}

void check_outputs(const std::string& checkpoint_dir, const std::string& resume, bool overwrite,
                   const std::string& metrics) {
  if (!checkpoint_dir.empty()) {
    train::check_writable_directory(checkpoint_dir, "--checkpoint-dir");
    const std::vector<fs::path> earlier = train::list_checkpoints(checkpoint_dir);
    if (resume.empty() && !overwrite && !earlier.empty())
      throw Error("--checkpoint-dir " + checkpoint_dir + " holds the checkpoints of an " +
                  "earlier run (" + std::to_string(earlier.size()) + ", the newest " +
                  earlier.back().filename().string() +
                  "); continue it with --resume auto, start afresh with --overwrite, which "
                  "removes them, or give another --checkpoint-dir");
  }
  if (!metrics.empty()) train::check_metrics_file(metrics, "--metrics");
}

}  // namespace minidl::tools
