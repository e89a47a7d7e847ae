#pragma once
// Where a profiled span of training steps spent its time on the device, from a plain list of
// device activities (kernels, memory copies, memsets) with their start and end timestamps.
// Pure arithmetic with no CUDA in it, so that the CPU tests check it; bench --profile fills
// the list with CUPTI (core/cupti_activity_recorder.h).
//
// The fields, per step (tools/bench/bench_pytorch.py computes the same from torch.profiler's
// events):
//   wall_ms_per_step    host time of the span (the device synchronised at both ends) / steps
//   kernels_per_step    kernel launches / steps
//   kernel_ms_per_step  sum of the kernels' durations / steps (overlapping kernels both count)
//   busy_ms_per_step    length of the union of all activity intervals (kernels, copies,
//                       memsets) / steps: the time the device was doing anything
//   gap_ms_per_step     wall - busy (never below 0): the time the device sat idle, waiting for
//                       the host (launch and framework overhead, synchronisation)
//   memcpy_ms_per_step  sum of the memory copies' and memsets' durations / steps
//   top_kernels         the kernels (by name) with the most total time, most first, each with
//                       ms_per_step and calls_per_step
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "minidl/core/device_activity.h"

namespace minidl::tools {

struct KernelTime {
  std::string name;
  double ms_per_step;
  double calls_per_step;
};

struct DeviceTimeSummary {
  int steps = 0;
  double wall_ms_per_step = 0;
  double kernels_per_step = 0;
  double kernel_ms_per_step = 0;
  double busy_ms_per_step = 0;
  double gap_ms_per_step = 0;
  double memcpy_ms_per_step = 0;
  std::vector<KernelTime> top_kernels;  // at most top_kernel_count, most total time first
};

constexpr size_t kDefaultTopKernelCount = 10;

// Nanoseconds covered by at least one activity (the length of the union of their intervals);
// the activities may come in any order and overlap or nest.
uint64_t covered_ns(const std::vector<DeviceActivity>& activities);

// `activities`: everything the device did during `steps` steps that took `wall_ms` on the host.
// Kernels of equal names are one entry of top_kernels; ties in time go by name.
DeviceTimeSummary summarize_device_time(const std::vector<DeviceActivity>& activities, int steps,
                                        double wall_ms,
                                        size_t top_kernel_count = kDefaultTopKernelCount);

}  // namespace minidl::tools
