// SKIP_WITHOUT_CUDA's decision (tests/test_util.h): a CUDA test runs with a device, and without
// one skips, unless MINIDL_EXPECT_GPU=1 says the machine has a GPU, when it fails; and why
// there is no device is named (core/cuda/device.h, unavailable_reason).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>

#include "minidl/core/cuda/device.h"
#include "test_util.h"

namespace minidl::testing {
namespace {

TEST(CudaTestDisposition, RunsWhereADeviceIsVisible) {
  EXPECT_EQ(cuda_test_disposition(1, nullptr), CudaTestDisposition::kRun);
  EXPECT_EQ(cuda_test_disposition(2, "1"), CudaTestDisposition::kRun);
  EXPECT_EQ(cuda_test_disposition(1, "0"), CudaTestDisposition::kRun);
}

TEST(CudaTestDisposition, SkipsWithoutADeviceUnlessOneIsExpected) {
  EXPECT_EQ(cuda_test_disposition(0, nullptr), CudaTestDisposition::kSkip);
  EXPECT_EQ(cuda_test_disposition(0, ""), CudaTestDisposition::kSkip);
  EXPECT_EQ(cuda_test_disposition(0, "0"), CudaTestDisposition::kSkip);
  EXPECT_EQ(cuda_test_disposition(0, "yes"), CudaTestDisposition::kSkip);  // only "1" means it
  EXPECT_EQ(cuda_test_disposition(0, "1"), CudaTestDisposition::kFail);
}

// A test that runs SKIP_WITHOUT_CUDA() from a statement EXPECT_FATAL_FAILURE can watch.
void start_a_cuda_test() { SKIP_WITHOUT_CUDA(); }

TEST(CudaTestDisposition, TheMacroFailsWithoutADeviceWhenOneIsExpected) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present; the macro runs the test";
  ScopedEnvironment expect_gpu("MINIDL_EXPECT_GPU", "1");
  EXPECT_FATAL_FAILURE(start_a_cuda_test(),
                       "MINIDL_EXPECT_GPU=1, but no CUDA device is available (");
}

TEST(CudaAvailability, TheReasonForNoDeviceIsNamedInErrors) {
  const std::string reason = cuda::unavailable_reason();
  if (cuda::is_available()) {
    EXPECT_EQ(reason, "");
    return;
  }
  if (!cuda::is_built())
    EXPECT_EQ(reason, "minidl was built without CUDA");
  else
    EXPECT_NE(reason, "");  // which one depends on the machine: no driver, no GPU, ...
  EXPECT_ERROR_CONTAINS(cuda::require_available("some_op"),
                        "some_op: no CUDA device is available (" + reason + ")");
}

}  // namespace
}  // namespace minidl::testing
