// kernels_for (Note [Kernel tables] in core/dispatch.h) picks a family's table by device. A
// family of the test's own stands in for the real ones, whose completeness each layer checks
// (tests/*/kernel_tables_test.cpp). Needs no GPU: the CUDA table is only returned, never called.
#include "minidl/core/dispatch.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace minidl {
namespace {

struct FakeKernels {
  int (*backend)();

  static const FakeKernels kCpu;
  static const FakeKernels kCuda;
};

const FakeKernels FakeKernels::kCpu{.backend = [] { return 0; }};
const FakeKernels FakeKernels::kCuda{.backend = [] { return 1; }};

TEST(KernelsFor, TheCpuTakesTheCpuTable) {
  EXPECT_EQ(&kernels_for<FakeKernels>(Device(kCPU)), &FakeKernels::kCpu);
}

TEST(KernelsFor, ACudaDeviceTakesTheCudaTableOrIsAnInternalErrorWithoutCuda) {
  if constexpr (cuda::kBuilt) {
    EXPECT_EQ(&kernels_for<FakeKernels>(Device(kCUDA, 1)), &FakeKernels::kCuda);
  } else {
    EXPECT_ERROR_CONTAINS(kernels_for<FakeKernels>(Device(kCUDA, 0)),
                          "a CUDA tensor exists in a build without CUDA");
  }
}

}  // namespace
}  // namespace minidl
