#include "minidl/core/profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "minidl/core/atomic_file.h"
#include "minidl/core/error.h"

namespace minidl::profiler {

Profile::Profile(ProfileOptions options)
    : recorder_(std::make_unique<OpProfiler>(/*keep_timeline=*/true, options.record_shapes)),
      record_shapes_(options.record_shapes),
      start_(std::chrono::steady_clock::now()) {}

Profile::~Profile() { stop(); }

void Profile::stop() {
  if (!recorder_) return;
  wall_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  spans_ = recorder_->timeline();
  recorder_.reset();
}

namespace {

// PyTorch's spelling of a list of shapes: "[[64, 1, 28, 28], [6, 1, 5, 5], []]".
std::string shapes_text(const std::vector<std::vector<int64_t>>& dims) {
  std::vector<std::string> shapes;
  shapes.reserve(dims.size());
  for (const auto& shape : dims) shapes.push_back(fmt::format("[{}]", fmt::join(shape, ", ")));
  return fmt::format("[{}]", fmt::join(shapes, ", "));
}

}  // namespace

std::vector<OpAverage> Profile::key_averages(bool group_by_input_shape) const {
  MINIDL_CHECK(!group_by_input_shape || record_shapes_,
               "Profile::key_averages: group_by_input_shape needs a profile that records shapes: "
               "Profile({.record_shapes = true})");
  // Keyed by name (and shapes), so that equal self times keep the names' order.
  std::map<std::pair<std::string, std::string>, OpAverage> by_key;
  for (const ProfileSpan& span : spans_) {
    if (span.event) continue;
    std::string shapes = group_by_input_shape ? shapes_text(span.input_dims) : std::string();
    OpAverage& op = by_key[{span.name, shapes}];
    op.name = span.name;
    op.input_shapes = std::move(shapes);
    ++op.calls;
    op.total_ms += static_cast<double>(span.duration_ns) / 1e6;
    op.self_ms += static_cast<double>(span.self_ns) / 1e6;
  }
  std::vector<OpAverage> averages;
  averages.reserve(by_key.size());
  for (auto& [key, op] : by_key) averages.push_back(std::move(op));
  std::stable_sort(averages.begin(), averages.end(),
                   [](const OpAverage& a, const OpAverage& b) { return a.self_ms > b.self_ms; });
  return averages;
}

std::string Profile::table(size_t rows, bool group_by_input_shape) const {
  const std::vector<OpAverage> averages = key_averages(group_by_input_shape);
  std::string text = fmt::format("{:<36} {:>8} {:>11} {:>11} {:>10} {:>7}", "op", "calls",
                                 "total ms", "self ms", "mean ms", "self %");
  text += group_by_input_shape ? "  input shapes\n" : "\n";
  double self_sum = 0;
  for (const OpAverage& op : averages) self_sum += op.self_ms;
  for (size_t i = 0; i < std::min(rows, averages.size()); ++i) {
    const OpAverage& op = averages[i];
    text += fmt::format("{:<36} {:>8} {:>11.3f} {:>11.3f} {:>10.4f} {:>6.1f}%",
                        op.name.substr(0, 36), op.calls, op.total_ms, op.self_ms,
                        op.total_ms / static_cast<double>(std::max<int64_t>(op.calls, 1)),
                        wall_ms_ > 0 ? 100.0 * op.self_ms / wall_ms_ : 0.0);
    text += group_by_input_shape ? "  " + op.input_shapes + "\n" : "\n";
  }
  text += fmt::format("{} ops, self time {:.3f} ms of {:.3f} ms wall ({:.1f}%)\n", averages.size(),
                      self_sum, wall_ms_, wall_ms_ > 0 ? 100.0 * self_sum / wall_ms_ : 0.0);
  return text;
}

void Profile::export_chrome_trace(const std::filesystem::path& path) const {
  nlohmann::json events = nlohmann::json::array();
  for (const ProfileSpan& span : spans_) {
    nlohmann::json event = {{"name", span.name},
                            {"cat", span.event ? "event" : "op"},
                            {"ph", "X"},
                            {"ts", static_cast<double>(span.start_ns) / 1e3},
                            {"dur", static_cast<double>(span.duration_ns) / 1e3},
                            {"pid", 0},
                            {"tid", span.thread}};
    if (record_shapes_ && !span.event)
      event["args"] = {{"Input Dims", span.input_dims}, {"Input type", span.input_types}};
    events.push_back(std::move(event));
  }
  const std::string text =
      nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  AtomicFileWriter file(path, "export_chrome_trace");
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace minidl::profiler
