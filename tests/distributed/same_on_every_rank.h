#pragma once
// Asserts that a tensor holds exactly the same bits on every rank of the default process group:
// the data-parallel tests' check that replicas stay identical. Gathers it from every rank and
// compares each rank's copy with rank 0's.
#include <gtest/gtest.h>

#include "minidl/core/tensor.h"
#include "minidl/distributed/distributed.h"
#include "test_util.h"

namespace minidl::testing {

inline void expect_same_on_every_rank(const Tensor& local) {
  const auto group = distributed::default_process_group();
  const int world = group->size();
  Tensor gathered = zeros({local.numel() * world}, local.dtype());
  group->all_gather(gathered, local.contiguous());
  for (int r = 1; r < world; ++r)
    EXPECT_TRUE(bitwise_equal(gathered.narrow(0, r * local.numel(), local.numel()),
                              gathered.narrow(0, 0, local.numel())))
        << "rank " << r << " differs from rank 0";
}

}  // namespace minidl::testing
