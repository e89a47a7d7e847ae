#include "minidl/tools/bench/device_time_summary.h"

#include <algorithm>
#include <map>
#include <utility>

#include "minidl/core/error.h"

namespace minidl::tools {
namespace {

constexpr double kNsPerMs = 1e6;

struct KernelTotal {
  uint64_t ns = 0;
  int64_t calls = 0;
};

}  // namespace

uint64_t covered_ns(const std::vector<DeviceActivity>& activities) {
  std::vector<std::pair<uint64_t, uint64_t>> intervals;  // (start, end), then sorted by start
  intervals.reserve(activities.size());
  for (const DeviceActivity& activity : activities) {
    MINIDL_CHECK(activity.end_ns >= activity.start_ns, "device activity \"", activity.name,
                 "\": expected end >= start, got start ", activity.start_ns, " ns and end ",
                 activity.end_ns, " ns");
    intervals.emplace_back(activity.start_ns, activity.end_ns);
  }
  std::sort(intervals.begin(), intervals.end());
  // One sweep: extend the current run while the next interval starts inside it.
  uint64_t covered = 0;
  size_t i = 0;
  while (i < intervals.size()) {
    const uint64_t run_start = intervals[i].first;
    uint64_t run_end = intervals[i].second;
    for (++i; i < intervals.size() && intervals[i].first <= run_end; ++i)
      run_end = std::max(run_end, intervals[i].second);
    covered += run_end - run_start;
  }
  return covered;
}

DeviceTimeSummary summarize_device_time(const std::vector<DeviceActivity>& activities, int steps,
                                        double wall_ms, size_t top_kernel_count) {
  MINIDL_CHECK(steps > 0, "summarize_device_time: expected at least one step, got ", steps);
  MINIDL_CHECK(wall_ms >= 0, "summarize_device_time: expected a wall time >= 0 ms, got ", wall_ms);
  const uint64_t busy_ns = covered_ns(activities);  // checks every end >= start too
  uint64_t kernel_ns = 0, copy_ns = 0;
  int64_t kernel_count = 0;
  std::map<std::string, KernelTotal> kernel_totals;
  for (const DeviceActivity& activity : activities) {
    const uint64_t duration = activity.end_ns - activity.start_ns;
    if (activity.kind == DeviceActivityKind::kKernel) {
      kernel_ns += duration;
      ++kernel_count;
      KernelTotal& total = kernel_totals[activity.name];
      total.ns += duration;
      ++total.calls;
    } else {
      copy_ns += duration;
    }
  }
  const double per_step = 1.0 / steps;
  DeviceTimeSummary summary;
  summary.steps = steps;
  summary.wall_ms_per_step = wall_ms * per_step;
  summary.kernels_per_step = static_cast<double>(kernel_count) * per_step;
  summary.kernel_ms_per_step = static_cast<double>(kernel_ns) / kNsPerMs * per_step;
  summary.busy_ms_per_step = static_cast<double>(busy_ns) / kNsPerMs * per_step;
  // The host's and the device's clocks are read apart, so busy can exceed wall by a hair when
  // the device never idled; the gap is then 0, not negative.
  summary.gap_ms_per_step = std::max(summary.wall_ms_per_step - summary.busy_ms_per_step, 0.0);
  summary.memcpy_ms_per_step = static_cast<double>(copy_ns) / kNsPerMs * per_step;

  std::vector<std::pair<std::string, KernelTotal>> ranked(kernel_totals.begin(),
                                                          kernel_totals.end());
  // stable_sort keeps the map's name order among equal times.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  ranked.resize(std::min(ranked.size(), top_kernel_count));
  for (const auto& [name, total] : ranked)
    summary.top_kernels.push_back({name, static_cast<double>(total.ns) / kNsPerMs * per_step,
                                   static_cast<double>(total.calls) * per_step});
  return summary;
}

}  // namespace minidl::tools
