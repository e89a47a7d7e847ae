// bench --profile's arithmetic (tools/bench/device_time_summary.h): the union of device
// activity intervals (overlapping, nested, touching, disjoint, empty, in any order), per-step
// averages over several steps, the split of kernels from copies, the idle gap, and the top
// kernels by total time.
#include "minidl/tools/bench/device_time_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace minidl::tools {
namespace {

constexpr double kTolerance = 1e-12;

DeviceActivity kernel(const std::string& name, uint64_t start_ns, uint64_t end_ns) {
  return {name, start_ns, end_ns, DeviceActivityKind::kKernel};
}

DeviceActivity memcpy_activity(uint64_t start_ns, uint64_t end_ns) {
  return {"memcpy HtoD", start_ns, end_ns, DeviceActivityKind::kMemcpy};
}

DeviceActivity memset_activity(uint64_t start_ns, uint64_t end_ns) {
  return {"memset", start_ns, end_ns, DeviceActivityKind::kMemset};
}

TEST(DeviceTimeSummary, CoveredTimeOfNothingIsZero) { EXPECT_EQ(covered_ns({}), 0u); }

TEST(DeviceTimeSummary, DisjointIntervalsAddUp) {
  EXPECT_EQ(covered_ns({kernel("a", 100, 110), kernel("b", 200, 205), kernel("c", 300, 301)}), 16u);
}

TEST(DeviceTimeSummary, OverlappingIntervalsCountTheirUnionOnce) {
  // [0, 10) and [5, 15) cover 15 ns; [12, 30) extends the same run to 30.
  EXPECT_EQ(covered_ns({kernel("a", 0, 10), kernel("b", 5, 15)}), 15u);
  EXPECT_EQ(covered_ns({kernel("a", 0, 10), kernel("b", 5, 15), kernel("c", 12, 30)}), 30u);
}

TEST(DeviceTimeSummary, NestedIntervalsCountTheOuterOne) {
  EXPECT_EQ(covered_ns({kernel("outer", 0, 100), kernel("inner", 10, 20), kernel("inner", 30, 100),
                        memcpy_activity(0, 1)}),
            100u);
}

TEST(DeviceTimeSummary, TouchingAndEmptyIntervals) {
  EXPECT_EQ(covered_ns({kernel("a", 0, 10), kernel("b", 10, 20)}), 20u);
  EXPECT_EQ(covered_ns({kernel("a", 5, 5), kernel("b", 7, 7)}), 0u);
  EXPECT_EQ(covered_ns({kernel("a", 0, 10), kernel("b", 5, 5)}), 10u);
}

TEST(DeviceTimeSummary, OrderOfTheInputDoesNotMatter) {
  // Two overlapping runs ([1000, 1600) and [2000, 2050)) and a lone kernel, in every order
  // a shuffle gives.
  std::vector<DeviceActivity> activities = {kernel("a", 1000, 1200),     kernel("b", 1100, 1500),
                                            memcpy_activity(1400, 1600), kernel("c", 2000, 2050),
                                            memset_activity(2010, 2020), kernel("d", 5000, 5003)};
  std::mt19937 generator(7);
  for (int shuffle = 0; shuffle < 20; ++shuffle) {
    std::shuffle(activities.begin(), activities.end(), generator);
    EXPECT_EQ(covered_ns(activities), 600u + 50u + 3u);
    const DeviceTimeSummary summary = summarize_device_time(activities, 1, 0.01);
    EXPECT_NEAR(summary.busy_ms_per_step, 653e-6, kTolerance);
    ASSERT_FALSE(summary.top_kernels.empty());
    EXPECT_EQ(summary.top_kernels.front().name, "b");
  }
}

TEST(DeviceTimeSummary, AveragesOverSeveralSteps) {
  // Three steps of the same work: gemm 2 ms and relu 0.5 ms overlapping by 0.25 ms, then a
  // 0.1 ms copy, then 0.4 ms idle; each step takes 3 ms on the host.
  std::vector<DeviceActivity> activities;
  constexpr uint64_t kStepNs = 3'000'000;
  for (uint64_t step = 0; step < 3; ++step) {
    const uint64_t origin = step * kStepNs;
    activities.push_back(kernel("gemm", origin, origin + 2'000'000));
    activities.push_back(kernel("relu", origin + 1'750'000, origin + 2'250'000));
    activities.push_back(memcpy_activity(origin + 2'500'000, origin + 2'600'000));
  }
  const DeviceTimeSummary summary = summarize_device_time(activities, 3, 9.0);
  EXPECT_EQ(summary.steps, 3);
  EXPECT_NEAR(summary.wall_ms_per_step, 3.0, kTolerance);
  EXPECT_NEAR(summary.kernels_per_step, 2.0, kTolerance);
  EXPECT_NEAR(summary.kernel_ms_per_step, 2.5, kTolerance);  // overlap counted in both kernels
  EXPECT_NEAR(summary.busy_ms_per_step, 2.35, kTolerance);   // 2.25 of kernels + 0.1 of copy
  EXPECT_NEAR(summary.gap_ms_per_step, 0.65, kTolerance);
  EXPECT_NEAR(summary.memcpy_ms_per_step, 0.1, kTolerance);
  ASSERT_EQ(summary.top_kernels.size(), 2u);
  EXPECT_EQ(summary.top_kernels[0].name, "gemm");
  EXPECT_NEAR(summary.top_kernels[0].ms_per_step, 2.0, kTolerance);
  EXPECT_NEAR(summary.top_kernels[0].calls_per_step, 1.0, kTolerance);
  EXPECT_EQ(summary.top_kernels[1].name, "relu");
  EXPECT_NEAR(summary.top_kernels[1].ms_per_step, 0.5, kTolerance);
}

TEST(DeviceTimeSummary, NoActivityMeansTheWholeWallTimeIsGap) {
  const DeviceTimeSummary summary = summarize_device_time({}, 4, 2.0);
  EXPECT_EQ(summary.kernels_per_step, 0);
  EXPECT_EQ(summary.kernel_ms_per_step, 0);
  EXPECT_EQ(summary.busy_ms_per_step, 0);
  EXPECT_EQ(summary.memcpy_ms_per_step, 0);
  EXPECT_NEAR(summary.gap_ms_per_step, 0.5, kTolerance);
  EXPECT_TRUE(summary.top_kernels.empty());
}

TEST(DeviceTimeSummary, CopiesAndMemsetsAreBusyButNotKernels) {
  const DeviceTimeSummary summary = summarize_device_time(
      {memcpy_activity(0, 300'000), memset_activity(200'000, 500'000)}, 1, 1.0);
  EXPECT_EQ(summary.kernels_per_step, 0);
  EXPECT_EQ(summary.kernel_ms_per_step, 0);
  EXPECT_NEAR(summary.memcpy_ms_per_step, 0.6, kTolerance);  // durations, overlap in both
  EXPECT_NEAR(summary.busy_ms_per_step, 0.5, kTolerance);
  EXPECT_TRUE(summary.top_kernels.empty());
}

TEST(DeviceTimeSummary, GapIsNeverNegative) {
  // Device clock and host clock are read apart: busy 1 ms against a host-measured 0.999 ms.
  const DeviceTimeSummary summary = summarize_device_time({kernel("k", 0, 1'000'000)}, 1, 0.999);
  EXPECT_NEAR(summary.busy_ms_per_step, 1.0, kTolerance);
  EXPECT_EQ(summary.gap_ms_per_step, 0);
}

TEST(DeviceTimeSummary, TopKernelsAreTheLongestInTotalThenByName) {
  // "many" runs 5 x 10 ns = 50 ns in total and outranks "once" (40 ns); "tie_a" and "tie_b"
  // (20 ns each) are ordered by name; only the top 3 are kept.
  std::vector<DeviceActivity> activities = {kernel("once", 0, 40), kernel("tie_b", 40, 60),
                                            kernel("tie_a", 60, 80), kernel("short", 80, 81)};
  for (uint64_t i = 0; i < 5; ++i) activities.push_back(kernel("many", 100 + 10 * i, 110 + 10 * i));
  const DeviceTimeSummary summary = summarize_device_time(activities, 1, 1.0, 3);
  ASSERT_EQ(summary.top_kernels.size(), 3u);
  EXPECT_EQ(summary.top_kernels[0].name, "many");
  EXPECT_NEAR(summary.top_kernels[0].calls_per_step, 5.0, kTolerance);
  EXPECT_NEAR(summary.top_kernels[0].ms_per_step, 50e-6, kTolerance);
  EXPECT_EQ(summary.top_kernels[1].name, "once");
  EXPECT_EQ(summary.top_kernels[2].name, "tie_a");
  EXPECT_NEAR(summary.kernels_per_step, 9.0, kTolerance);  // all kernels, not only the top 3
  EXPECT_EQ(summarize_device_time(activities, 1, 1.0).top_kernels.size(), 5u);  // default 10
}

TEST(DeviceTimeSummary, RejectsAnEndBeforeTheStartAndZeroSteps) {
  EXPECT_ERROR_CONTAINS(covered_ns({kernel("backwards", 20, 10)}),
                        "device activity \"backwards\": expected end >= start, got start 20 ns");
  EXPECT_ERROR_CONTAINS(summarize_device_time({kernel("backwards", 20, 10)}, 1, 1.0),
                        "expected end >= start");
  EXPECT_ERROR_CONTAINS(summarize_device_time({}, 0, 1.0), "expected at least one step, got 0");
}

}  // namespace
}  // namespace minidl::tools
