// Every kernel table of optim/ fills every entry, on each backend of the build
// (tests/kernel_table_checks.h).
#include <gtest/gtest.h>

#include "kernel_table_checks.h"
#include "minidl/optim/amp_kernels.h"
#include "minidl/optim/multi_tensor_kernels.h"
#include "minidl/optim/optim.h"

namespace minidl::optim {
namespace {

using minidl::testing::expect_complete_tables;

TEST(KernelTables, EveryEntryOfEveryOptimTableIsSet) {
  expect_complete_tables<AmpKernels>("amp");
  expect_complete_tables<UpdateKernels<SgdOp>>("sgd");
  expect_complete_tables<UpdateKernels<AdamOp>>("adam");
  expect_complete_tables<UpdateKernels<RmspropOp>>("rmsprop");
  expect_complete_tables<StepCountKernels>("step count");
}

}  // namespace
}  // namespace minidl::optim
