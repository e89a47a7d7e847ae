// bench --profile's CUPTI recorder in a build without CUDA: it says that it cannot record.
// (tests/tools/cupti_activity_recorder_cuda_test.cpp tests the recording itself on a GPU.)
#include "minidl/core/cupti_activity_recorder.h"

#include <gtest/gtest.h>

#include "minidl/core/cuda/device.h"
#include "test_util.h"

namespace minidl::tools {
namespace {

TEST(CuptiActivityRecorder, WithoutCudaSaysThereIsNoCupti) {
  if (cuda::is_built()) GTEST_SKIP() << "minidl was built with CUDA: the recorder works there";
  EXPECT_ERROR_CONTAINS(CuptiActivityRecorder(), "expected a build with CUDA and CUPTI");
}

}  // namespace
}  // namespace minidl::tools
