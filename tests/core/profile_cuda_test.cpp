// profiler::Profile on a GPU (core/profile.h): CUPTI's kernels and copies come back under the op
// that launched them, on the profile's clock, with each op's device time in its row. Needs a GPU
// and a build with CUPTI; tests/core/profile_test.cpp checks the placing itself on the CPU.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "minidl/core/cuda/device.h"
#include "minidl/core/cupti_activity_recorder.h"
#include "minidl/core/profile.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "test_util.h"

namespace minidl {
namespace {

TEST(ProfileCuda, EachKernelIsUnderTheOpThatLaunchedItOnTheProfilesClock) {
  SKIP_WITHOUT_CUDA();
  if (!CuptiActivityRecorder::available()) GTEST_SKIP() << "this CUDA build has no CUPTI";
  const Tensor x = randn({1 << 20}).cuda();
  Tensor y = relu(mul(add(x, 1.0), x));  // first launches (module loading) before the profile
  cuda::synchronize();

  profiler::Profile profile;
  y = relu(mul(add(x, 1.0), x));
  const Tensor on_host = y.cpu();
  profile.stop();

  std::map<uint64_t, const ProfileSpan*> op_by_id;
  for (const ProfileSpan& span : profile.spans())
    if (!span.event) op_by_id[span.id] = &span;
  std::map<std::string, int> kernels_by_op;
  int copies = 0;
  for (const profiler::DeviceSpan& device : profile.device_spans()) {
    EXPECT_GT(device.duration_ns, 0) << device.name;
    if (device.kind == DeviceActivityKind::kMemcpy) ++copies;
    if (device.kind != DeviceActivityKind::kKernel) continue;
    ASSERT_TRUE(op_by_id.count(device.op_id)) << device.name << " has no op";
    const ProfileSpan& op = *op_by_id.at(device.op_id);
    ++kernels_by_op[op.name];
    // A kernel starts after its launch began (the clocks agree to well under 0.1 ms).
    EXPECT_GE(device.start_ns, op.start_ns - 100'000) << device.name << " under " << op.name;
  }
  EXPECT_EQ(kernels_by_op["add"], 1) << profile.table();
  EXPECT_EQ(kernels_by_op["mul"], 1) << profile.table();
  EXPECT_EQ(kernels_by_op["relu"], 1) << profile.table();
  EXPECT_GE(copies, 1) << profile.table();
  for (const auto& op : profile.key_averages())
    if (op.name == "add" || op.name == "mul" || op.name == "relu")
      EXPECT_GT(op.device_ms, 0) << op.name;
  EXPECT_NE(profile.table().find("device ms"), std::string::npos);
}

TEST(ProfileCuda, RecordDeviceOffRecordsNoDeviceWork) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = randn({1 << 10}).cuda();
  profiler::Profile profile({.record_device = false});
  (void)add(x, 1.0);
  profile.stop();
  EXPECT_TRUE(profile.device_spans().empty());
}

}  // namespace
}  // namespace minidl
