// Every kernel table of data/ fills every entry, on each backend of the build
// (tests/kernel_table_checks.h).
#include <gtest/gtest.h>

#include "kernel_table_checks.h"
#include "minidl/data/loader/gather_rows_kernels.h"
#include "minidl/data/transforms/batch_augment_kernels.h"

namespace minidl::data {
namespace {

using minidl::testing::expect_complete_tables;

TEST(KernelTables, EveryEntryOfEveryDataTableIsSet) {
  expect_complete_tables<BatchAugmentKernels>("batch augment");
  expect_complete_tables<GatherRowsKernels>("gather rows");
}

}  // namespace
}  // namespace minidl::data
