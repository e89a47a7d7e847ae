// bench --profile's CUPTI recorder (core/cupti_activity_recorder.h) on a GPU: it sees
// exactly the element-wise kernels and the copy that ran while it recorded, with names and
// device timestamps whose union fits inside the host's wall time; discard_recorded() forgets
// earlier work; and only one recorder may exist at a time.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/cupti_activity_recorder.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/tools/bench/device_time_summary.h"
#include "test_util.h"

namespace minidl::tools {
namespace {

constexpr int kSteps = 4;
constexpr int kKernelsPerStep = 3;  // add, mul, relu: one launch each on a contiguous tensor

// One "step" of three element-wise ops on about a million floats.
Tensor elementwise_step(const Tensor& x) { return relu(mul(add(x, 1.0), x)); }

int64_t count_of(const std::vector<DeviceActivity>& activities, DeviceActivityKind kind) {
  int64_t count = 0;
  for (const DeviceActivity& activity : activities) count += activity.kind == kind;
  return count;
}

std::string names_of(const std::vector<DeviceActivity>& activities) {
  std::ostringstream names;
  for (const DeviceActivity& activity : activities) names << "\n  " << activity.name;
  return names.str();
}

TEST(CuptiActivityRecorderCuda, RecordsTheKernelsAndCopiesThatRan) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = randn({1 << 20}).cuda();
  Tensor y = elementwise_step(x);  // the kernels' first launches (module loading) come before
  cuda::synchronize();

  CuptiActivityRecorder recorder;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < kSteps; ++step) y = elementwise_step(x);
  const Tensor on_host = y.cpu();  // one device-to-host copy
  cuda::synchronize();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::vector<DeviceActivity> activities = recorder.finish();

  EXPECT_EQ(count_of(activities, DeviceActivityKind::kKernel), kSteps * kKernelsPerStep)
      << "recorded:" << names_of(activities);
  EXPECT_GE(count_of(activities, DeviceActivityKind::kMemcpy), 1) << names_of(activities);
  for (const DeviceActivity& activity : activities) {
    EXPECT_FALSE(activity.name.empty());
    EXPECT_GT(activity.start_ns, 0u);
    EXPECT_GE(activity.end_ns, activity.start_ns) << activity.name;
  }
  const DeviceTimeSummary summary = summarize_device_time(activities, kSteps, wall_ms);
  EXPECT_DOUBLE_EQ(summary.kernels_per_step, kKernelsPerStep);
  EXPECT_GT(summary.kernel_ms_per_step, 0);
  EXPECT_GT(summary.busy_ms_per_step, 0);
  EXPECT_LE(summary.busy_ms_per_step, summary.wall_ms_per_step);
  EXPECT_GT(summary.memcpy_ms_per_step, 0);
  double calls_per_step = 0;
  for (const KernelTime& kernel : summary.top_kernels) calls_per_step += kernel.calls_per_step;
  EXPECT_DOUBLE_EQ(calls_per_step, kKernelsPerStep);
  // Demangled: a C++ kernel's name reads as a signature, not as _Z...
  for (const KernelTime& kernel : summary.top_kernels)
    EXPECT_NE(kernel.name.rfind("_Z", 0), 0u) << kernel.name;
}

TEST(CuptiActivityRecorderCuda, DiscardRecordedForgetsEarlierWork) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = randn({1 << 16}).cuda();
  Tensor y = elementwise_step(x);
  cuda::synchronize();
  CuptiActivityRecorder recorder;
  y = elementwise_step(x);
  y = elementwise_step(x);
  cuda::synchronize();
  recorder.discard_recorded();
  y = elementwise_step(x);
  cuda::synchronize();
  const std::vector<DeviceActivity> activities = recorder.finish();
  EXPECT_EQ(count_of(activities, DeviceActivityKind::kKernel), kKernelsPerStep)
      << "recorded:" << names_of(activities);
}

TEST(CuptiActivityRecorderCuda, OnlyOneRecorderAtATime) {
  SKIP_WITHOUT_CUDA();
  {
    CuptiActivityRecorder first;
    EXPECT_ERROR_CONTAINS(CuptiActivityRecorder(), "expected one recorder at a time");
  }
  CuptiActivityRecorder after_the_first_is_gone;  // the destructor let go of CUPTI
  EXPECT_TRUE(after_the_first_is_gone.finish().empty());
}

}  // namespace
}  // namespace minidl::tools
