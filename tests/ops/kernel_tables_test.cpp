// Every kernel table of ops/ fills every entry, on each backend of the build
// (tests/kernel_table_checks.h). kernels_for itself is tested in tests/core/dispatch_test.cpp.
#include <gtest/gtest.h>

#include "kernel_table_checks.h"
#include "minidl/ops/attention_kernels.h"
#include "minidl/ops/conv_kernels.h"
#include "minidl/ops/copy_kernels.h"
#include "minidl/ops/dropout_kernels.h"
#include "minidl/ops/elementwise_kernels.h"
#include "minidl/ops/embedding_kernels.h"
#include "minidl/ops/group_norm_kernels.h"
#include "minidl/ops/indexing_kernels.h"
#include "minidl/ops/layer_norm_kernels.h"
#include "minidl/ops/linalg_kernels.h"
#include "minidl/ops/loss_kernels.h"
#include "minidl/ops/norm_kernels.h"
#include "minidl/ops/pool_kernels.h"
#include "minidl/ops/random_kernels.h"
#include "minidl/ops/reduce_kernels.h"
#include "minidl/ops/scan_kernels.h"
#include "minidl/ops/shape_kernels.h"
#include "minidl/ops/sort_kernels.h"

namespace minidl {
namespace {

using testing::expect_complete_tables;

TEST(KernelTables, EveryEntryOfEveryOpsTableIsSet) {
  expect_complete_tables<AttentionKernels>("attention");
  expect_complete_tables<ConvKernels>("conv");
  expect_complete_tables<CopyKernels>("copy");
  expect_complete_tables<DropoutKernels>("dropout");
  expect_complete_tables<ElementwiseKernels>("elementwise");
  expect_complete_tables<LayerNormKernels>("layer_norm");
  expect_complete_tables<GroupNormKernels>("group_norm");
  expect_complete_tables<EmbeddingKernels>("embedding");
  expect_complete_tables<IndexingKernels>("indexing");
  expect_complete_tables<LinalgKernels>("linalg");
  expect_complete_tables<LossKernels>("loss");
  expect_complete_tables<NormKernels>("norm");
  expect_complete_tables<PoolKernels>("pool");
  expect_complete_tables<RandomKernels>("random");
  expect_complete_tables<ReduceKernels>("reduce");
  expect_complete_tables<ScanKernels>("scan");
  expect_complete_tables<ShapeKernels>("shape");
  expect_complete_tables<SortKernels>("sort");
}

}  // namespace
}  // namespace minidl
