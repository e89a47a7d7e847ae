// The kernel tables and kernels_for (Note [Kernel tables] in ops/dispatch.h): every table of the
// build fills every entry (a designated initializer that forgets a member leaves it null, which
// only a call would reveal), and kernels_for picks the table by device. Needs no GPU: the CUDA
// tables are only read.
#include "minidl/ops/dispatch.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "minidl/ops/conv_kernels.h"
#include "minidl/ops/copy_kernels.h"
#include "minidl/ops/dropout_kernels.h"
#include "minidl/ops/elementwise_kernels.h"
#include "minidl/ops/linalg_kernels.h"
#include "minidl/ops/loss_kernels.h"
#include "minidl/ops/norm_kernels.h"
#include "minidl/ops/pool_kernels.h"
#include "minidl/ops/random_kernels.h"
#include "minidl/ops/reduce_kernels.h"
#include "minidl/ops/shape_kernels.h"
#include "test_util.h"

namespace minidl {
namespace {

// The indices of the null entries of `table`, a struct of function pointers only.
template <class Kernels>
std::string null_entries(const Kernels& table) {
  static_assert(sizeof(Kernels) % sizeof(uintptr_t) == 0, "a table holds function pointers only");
  std::array<uintptr_t, sizeof(Kernels) / sizeof(uintptr_t)> entries;
  std::memcpy(entries.data(), &table, sizeof(Kernels));
  std::string nulls;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i] == 0) nulls += std::to_string(i) + " ";
  return nulls;
}

template <class Kernels>
void expect_complete_tables(const char* family) {
  EXPECT_EQ(null_entries(Kernels::kCpu), "") << family << "'s CPU table, null entries";
  if constexpr (cuda::kBuilt)
    EXPECT_EQ(null_entries(Kernels::kCuda), "") << family << "'s CUDA table, null entries";
}

TEST(KernelTables, EveryEntryOfEveryTableIsSet) {
  expect_complete_tables<ConvKernels>("conv");
  expect_complete_tables<CopyKernels>("copy");
  expect_complete_tables<DropoutKernels>("dropout");
  expect_complete_tables<ElementwiseKernels>("elementwise");
  expect_complete_tables<LinalgKernels>("linalg");
  expect_complete_tables<LossKernels>("loss");
  expect_complete_tables<NormKernels>("norm");
  expect_complete_tables<PoolKernels>("pool");
  expect_complete_tables<RandomKernels>("random");
  expect_complete_tables<ReduceKernels>("reduce");
  expect_complete_tables<ShapeKernels>("shape");
}

TEST(KernelsFor, TheCpuTakesTheCpuTable) {
  EXPECT_EQ(&kernels_for<PoolKernels>(Device(kCPU)), &PoolKernels::kCpu);
  EXPECT_EQ(&kernels_for<ElementwiseKernels>(Device(kCPU)), &ElementwiseKernels::kCpu);
}

TEST(KernelsFor, ACudaDeviceTakesTheCudaTableOrIsAnInternalErrorWithoutCuda) {
  if constexpr (cuda::kBuilt) {
    EXPECT_EQ(&kernels_for<PoolKernels>(Device(kCUDA, 1)), &PoolKernels::kCuda);
  } else {
    EXPECT_ERROR_CONTAINS(kernels_for<PoolKernels>(Device(kCUDA, 0)),
                          "a CUDA tensor exists in a build without CUDA");
  }
}

}  // namespace
}  // namespace minidl
