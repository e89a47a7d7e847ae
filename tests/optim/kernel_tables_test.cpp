// Every kernel table of optim/ fills every entry, on each backend of the build
// (tests/kernel_table_checks.h).
#include <gtest/gtest.h>

#include "kernel_table_checks.h"
#include "minidl/optim/amp_kernels.h"

namespace minidl::optim {
namespace {

using minidl::testing::expect_complete_tables;

TEST(KernelTables, EveryEntryOfEveryOptimTableIsSet) { expect_complete_tables<AmpKernels>("amp"); }

}  // namespace
}  // namespace minidl::optim
