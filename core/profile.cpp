#include "minidl/core/profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "minidl/core/atomic_file.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"

namespace minidl::profiler {

namespace {

// The profile's clock less CUPTI's, read at one instant (CUPTI's read on both sides of the
// host's, so the error is half the time between them).
int64_t device_to_profile_offset_ns(std::chrono::steady_clock::time_point profile_start) {
  const uint64_t before = CuptiActivityRecorder::timestamp_ns();
  const auto host = std::chrono::steady_clock::now();
  const uint64_t after = CuptiActivityRecorder::timestamp_ns();
  const int64_t host_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(host - profile_start).count();
  return host_ns - static_cast<int64_t>(before + (after - before) / 2);
}

}  // namespace

Profile::Profile(ProfileOptions options) : record_shapes_(options.record_shapes) {
  const bool record_device =
      options.record_device && CuptiActivityRecorder::available() && cuda::is_available();
  if (record_device) {
    cuda::synchronize();  // earlier work is not this profile's
    device_recorder_ = std::make_unique<CuptiActivityRecorder>(/*correlate=*/true);
  }
  recorder_ = std::make_unique<OpProfiler>(/*keep_timeline=*/true, options.record_shapes,
                                           /*push_external_ids=*/record_device);
  start_ = recorder_->start_time();
  if (record_device) device_to_profile_ns_ = device_to_profile_offset_ns(start_);
}

Profile::~Profile() {
  try {
    stop();
  } catch (const std::exception& e) {  // a destructor must not throw: the profile is lost
    logger().error("profiler::Profile: {}", e.what());
  }
}

void Profile::stop() {
  if (!recorder_) return;
  wall_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  spans_ = recorder_->timeline();
  recorder_.reset();
  if (device_recorder_) {
    cuda::synchronize();  // a kernel still running has no end time yet
    const std::unique_ptr<CuptiActivityRecorder> device = std::move(device_recorder_);
    const std::vector<DeviceActivity> activities = device->finish();
    add_device_activities(activities, device->external_ids(), device_to_profile_ns_);
  }
}

void Profile::add_device_activities(const std::vector<DeviceActivity>& activities,
                                    const std::unordered_map<uint32_t, uint64_t>& external_ids,
                                    int64_t device_to_profile_ns) {
  for (const DeviceActivity& activity : activities) {
    const auto op = external_ids.find(activity.correlation_id);
    device_spans_.push_back({activity.name, activity.kind,
                             static_cast<int64_t>(activity.start_ns) + device_to_profile_ns,
                             static_cast<int64_t>(activity.end_ns - activity.start_ns),
                             activity.stream_id, op != external_ids.end() ? op->second : 0});
  }
  std::stable_sort(
      device_spans_.begin(), device_spans_.end(),
      [](const DeviceSpan& a, const DeviceSpan& b) { return a.start_ns < b.start_ns; });
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
  std::unordered_map<uint64_t, OpAverage*> by_id;  // each op span's row, for its device time
  for (const ProfileSpan& span : spans_) {
    if (span.event) continue;
    std::string shapes = group_by_input_shape ? shapes_text(span.input_dims) : std::string();
    OpAverage& op = by_key[{span.name, shapes}];
    by_id[span.id] = &op;
    op.name = span.name;
    op.input_shapes = std::move(shapes);
    ++op.calls;
    op.total_ms += static_cast<double>(span.duration_ns) / 1e6;
    op.self_ms += static_cast<double>(span.self_ns) / 1e6;
  }
  for (const DeviceSpan& device : device_spans_) {
    const auto op = by_id.find(device.op_id);
    if (device.op_id != 0 && op != by_id.end())
      op->second->device_ms += static_cast<double>(device.duration_ns) / 1e6;
  }
  std::vector<OpAverage> averages;
  averages.reserve(by_key.size());
  for (auto& [key, op] : by_key) averages.push_back(std::move(op));
  std::stable_sort(averages.begin(), averages.end(),
                   [](const OpAverage& a, const OpAverage& b) { return a.self_ms > b.self_ms; });
  return averages;
}

namespace {

const char* device_category(DeviceActivityKind kind) {
  switch (kind) {
    case DeviceActivityKind::kKernel: return "kernel";
    case DeviceActivityKind::kMemcpy: return "gpu_memcpy";
    case DeviceActivityKind::kMemset: return "gpu_memset";
  }
  return "gpu";
}

}  // namespace

std::string Profile::table(size_t rows, bool group_by_input_shape) const {
  const std::vector<OpAverage> averages = key_averages(group_by_input_shape);
  const bool device = !device_spans_.empty();
  std::string text = fmt::format("{:<36} {:>8} {:>11} {:>11} {:>10} {:>7}", "op", "calls",
                                 "total ms", "self ms", "mean ms", "self %");
  if (device) text += fmt::format(" {:>11}", "device ms");
  text += group_by_input_shape ? "  input shapes\n" : "\n";
  double self_sum = 0;
  for (const OpAverage& op : averages) self_sum += op.self_ms;
  for (size_t i = 0; i < std::min(rows, averages.size()); ++i) {
    const OpAverage& op = averages[i];
    text += fmt::format("{:<36} {:>8} {:>11.3f} {:>11.3f} {:>10.4f} {:>6.1f}%",
                        op.name.substr(0, 36), op.calls, op.total_ms, op.self_ms,
                        op.total_ms / static_cast<double>(std::max<int64_t>(op.calls, 1)),
                        wall_ms_ > 0 ? 100.0 * op.self_ms / wall_ms_ : 0.0);
    if (device) text += fmt::format(" {:>11.3f}", op.device_ms);
    text += group_by_input_shape ? "  " + op.input_shapes + "\n" : "\n";
  }
  text += fmt::format("{} ops, self time {:.3f} ms of {:.3f} ms wall ({:.1f}%)\n", averages.size(),
                      self_sum, wall_ms_, wall_ms_ > 0 ? 100.0 * self_sum / wall_ms_ : 0.0);
  if (device) {
    double device_ms = 0, outside_ms = 0;
    for (const DeviceSpan& span : device_spans_) {
      device_ms += static_cast<double>(span.duration_ns) / 1e6;
      if (span.op_id == 0) outside_ms += static_cast<double>(span.duration_ns) / 1e6;
    }
    text += fmt::format(
        "{} device activities, {:.3f} ms of device time ({:.3f} ms launched "
        "outside any op)\n",
        device_spans_.size(), device_ms, outside_ms);
  }
  return text;
}

void Profile::export_chrome_trace(const std::filesystem::path& path) const {
  const bool device = !device_spans_.empty();
  nlohmann::json events = nlohmann::json::array();
  std::unordered_map<uint64_t, const ProfileSpan*> op_by_id;
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
    if (device && !span.event) {
      event["args"]["External id"] = span.id;
      op_by_id[span.id] = &span;
    }
    events.push_back(std::move(event));
  }
  if (device) {
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", "host"}}}});
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "device"}}}});
  }
  uint64_t flow = 0;
  for (const DeviceSpan& span : device_spans_) {
    const double ts = static_cast<double>(span.start_ns) / 1e3;
    nlohmann::json event = {{"name", span.name},
                            {"cat", device_category(span.kind)},
                            {"ph", "X"},
                            {"ts", ts},
                            {"dur", static_cast<double>(span.duration_ns) / 1e3},
                            {"pid", 1},
                            {"tid", span.stream}};
    const auto op = op_by_id.find(span.op_id);
    if (op != op_by_id.end()) {
      event["args"] = {{"External id", span.op_id}, {"op", op->second->name}};
      // An arrow from the op to what it launched, as PyTorch's traces draw them.
      ++flow;
      events.push_back({{"name", "launch"},
                        {"cat", "ac2g"},
                        {"ph", "s"},
                        {"id", flow},
                        {"pid", 0},
                        {"tid", op->second->thread},
                        {"ts", static_cast<double>(op->second->start_ns) / 1e3}});
      events.push_back({{"name", "launch"},
                        {"cat", "ac2g"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", flow},
                        {"pid", 1},
                        {"tid", span.stream},
                        {"ts", ts}});
    }
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
