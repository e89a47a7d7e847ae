#include "minidl/core/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "minidl/core/atomic_file.h"

namespace minidl::profiler {

Profile::Profile()
    : recorder_(std::make_unique<OpProfiler>(/*keep_timeline=*/true)),
      start_(std::chrono::steady_clock::now()) {}

Profile::~Profile() { stop(); }

void Profile::stop() {
  if (!recorder_) return;
  wall_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  spans_ = recorder_->timeline();
  ops_ = recorder_->ops();
  recorder_.reset();
}

std::vector<OpAverage> Profile::key_averages() const {
  std::map<std::string, double> total_ms;
  for (const ProfileSpan& span : spans_)
    if (!span.event) total_ms[span.name] += static_cast<double>(span.duration_ns) / 1e6;
  std::vector<OpAverage> averages;
  for (const OpProfiler::Record& op : ops_)
    averages.push_back({op.name, op.calls, total_ms[op.name], op.self_ms});
  return averages;  // ops_ is by self time already
}

std::string Profile::table(size_t rows) const {
  const std::vector<OpAverage> averages = key_averages();
  std::string text = fmt::format("{:<36} {:>8} {:>11} {:>11} {:>10} {:>7}\n", "op", "calls",
                                 "total ms", "self ms", "mean ms", "self %");
  double self_sum = 0;
  for (const OpAverage& op : averages) self_sum += op.self_ms;
  for (size_t i = 0; i < std::min(rows, averages.size()); ++i) {
    const OpAverage& op = averages[i];
    text += fmt::format("{:<36} {:>8} {:>11.3f} {:>11.3f} {:>10.4f} {:>6.1f}%\n",
                        op.name.substr(0, 36), op.calls, op.total_ms, op.self_ms,
                        op.total_ms / static_cast<double>(std::max<int64_t>(op.calls, 1)),
                        wall_ms_ > 0 ? 100.0 * op.self_ms / wall_ms_ : 0.0);
  }
  text += fmt::format("{} ops, self time {:.3f} ms of {:.3f} ms wall ({:.1f}%)\n", averages.size(),
                      self_sum, wall_ms_, wall_ms_ > 0 ? 100.0 * self_sum / wall_ms_ : 0.0);
  return text;
}

void Profile::export_chrome_trace(const std::filesystem::path& path) const {
  nlohmann::json events = nlohmann::json::array();
  for (const ProfileSpan& span : spans_)
    events.push_back({{"name", span.name},
                      {"cat", span.event ? "event" : "op"},
                      {"ph", "X"},
                      {"ts", static_cast<double>(span.start_ns) / 1e3},
                      {"dur", static_cast<double>(span.duration_ns) / 1e3},
                      {"pid", 0},
                      {"tid", span.thread}});
  const std::string text =
      nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  AtomicFileWriter file(path, "export_chrome_trace");
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace minidl::profiler
