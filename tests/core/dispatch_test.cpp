// kernels_for (Note [Kernel tables] in core/dispatch.h) picks a family's table by device. A
// family of the test's own stands in for the real ones, whose completeness each layer checks
// (tests/*/kernel_tables_test.cpp). Needs no GPU: the CUDA table is only returned, never called.
#include "minidl/core/dispatch.h"

#include <gtest/gtest.h>

#include "minidl/core/cuda/device.h"
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

// The headers' inline code (kernels_for among it) branches on cuda::kBuilt, so a program must
// see the library's value: compiled with another, its own copies of kernels_for sent every
// CUDA tensor to the "without CUDA" error (every optimizer step on the H100, 2026-11-28).
TEST(KernelsFor, AProgramSeesTheLibrarysCudaBuild) { EXPECT_EQ(cuda::kBuilt, cuda::is_built()); }

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
