// Every collective of MpiProcessGroup, for every dtype, for 0, 1, an odd number and several
// megabytes of elements, checked exactly: the values are small integers (i % 7 + rank), which
// every dtype holds exactly, and so are their sums and averages over up to 4 ranks.
#include <gtest/gtest.h>

#include <vector>

#include "minidl/distributed/distributed.h"
#include "test_util.h"

namespace minidl {
namespace {

using distributed::ReduceOp;

const std::vector<DType> kDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16,
                                    kInt32,   kInt64,   kUInt8};

// 0, 1, odd, and about 3 MB (odd too).
std::vector<int64_t> sizes_for(DType dtype) {
  return {0, 1, 1001, static_cast<int64_t>((3 << 20) / element_size(dtype)) + 1};
}

// Element i of rank r's tensor: i % 7 + r (+ shift).
Tensor rank_values(int64_t numel, DType dtype, int rank, double shift = 0) {
  std::vector<double> values(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    values[static_cast<size_t>(i)] = static_cast<double>(i % 7) + rank + shift;
  return from_host(values.data(), {numel}, kFloat64).to(dtype);
}

// Fills from a function of the element index, computed in double, rounded to dtype.
template <class F>
Tensor expected_values(int64_t numel, DType dtype, F&& f) {
  std::vector<double> values(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) values[static_cast<size_t>(i)] = f(i);
  return from_host(values.data(), {numel}, kFloat64).to(dtype);
}

class MpiCollectives : public ::testing::Test {
 protected:
  std::shared_ptr<distributed::ProcessGroup> group = distributed::default_process_group();
  int rank = group->rank();
  int world = group->size();
};

TEST_F(MpiCollectives, TheDefaultGroupIsMpiOverEveryRank) {
  EXPECT_EQ(group->backend_name(), "mpi");
  EXPECT_EQ(world, distributed::world_size());
  EXPECT_EQ(rank, distributed::rank());
  EXPECT_GE(world, 2);
}

TEST_F(MpiCollectives, AllReduceSumAverageAndMax) {
  const double rank_sum = world * (world - 1) / 2.0;
  for (DType dtype : kDTypes) {
    for (int64_t numel : sizes_for(dtype)) {
      SCOPED_TRACE(::testing::Message() << dtype << " x " << numel << " on rank " << rank);
      Tensor sum = rank_values(numel, dtype, rank);
      group->all_reduce(sum, ReduceOp::Sum);
      EXPECT_TRUE(testing::all_close(
          sum, expected_values(numel, dtype, [&](int64_t i) { return world * (i % 7) + rank_sum; }),
          0, 0));
      Tensor max = rank_values(numel, dtype, rank);
      group->all_reduce(max, ReduceOp::Max);
      EXPECT_TRUE(testing::all_close(
          max, expected_values(numel, dtype, [&](int64_t i) { return (i % 7) + world - 1.0; }), 0,
          0));
      if (!is_floating_point(dtype)) continue;
      Tensor average = rank_values(numel, dtype, rank);
      group->all_reduce(average, ReduceOp::Average);
      EXPECT_TRUE(testing::all_close(
          average,
          expected_values(numel, dtype, [&](int64_t i) { return (i % 7) + rank_sum / world; }), 0,
          0));
    }
  }
}

TEST_F(MpiCollectives, BroadcastFromTheFirstAndTheLastRank) {
  for (DType dtype : kDTypes) {
    for (int64_t numel : sizes_for(dtype)) {
      for (int root : {0, world - 1}) {
        SCOPED_TRACE(::testing::Message() << dtype << " x " << numel << " from " << root);
        Tensor values = rank_values(numel, dtype, rank, 10);
        group->broadcast(values, root);
        EXPECT_TRUE(testing::all_close(values, rank_values(numel, dtype, root, 10), 0, 0));
      }
    }
  }
}

TEST_F(MpiCollectives, AllGatherInRankOrder) {
  for (DType dtype : kDTypes) {
    for (int64_t numel : sizes_for(dtype)) {
      SCOPED_TRACE(::testing::Message() << dtype << " x " << numel);
      Tensor gathered = zeros({numel * world}, dtype);
      group->all_gather(gathered, rank_values(numel, dtype, rank));
      EXPECT_TRUE(testing::all_close(gathered,
                                     expected_values(numel * world, dtype,
                                                     [&](int64_t j) {
                                                       return (j % numel) % 7 +
                                                              static_cast<double>(j / numel);
                                                     }),
                                     0, 0));
    }
  }
}

TEST_F(MpiCollectives, ReduceScatterKeepsThisRanksSlice) {
  const double rank_sum = world * (world - 1) / 2.0;
  for (DType dtype : kDTypes) {
    for (int64_t numel : sizes_for(dtype)) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average}) {
        if (op == ReduceOp::Average && !is_floating_point(dtype)) continue;
        SCOPED_TRACE(::testing::Message()
                     << dtype << " x " << numel << " " << distributed::reduce_op_name(op));
        Tensor output = zeros({numel}, dtype);
        group->reduce_scatter(output, rank_values(numel * world, dtype, rank), op);
        EXPECT_TRUE(testing::all_close(
            output,
            expected_values(numel, dtype,
                            [&](int64_t i) {
                              const double sum = world * ((rank * numel + i) % 7) + rank_sum;
                              return op == ReduceOp::Sum ? sum : sum / world;
                            }),
            0, 0));
      }
    }
  }
}

TEST_F(MpiCollectives, AsyncCollectivesFinishWhateverOrderTheyAreWaitedIn) {
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<distributed::Work>> works;
  for (int k = 0; k < 8; ++k) {
    tensors.push_back(full({1000 + k}, k + rank, kFloat32));
    works.push_back(group->all_reduce_async(tensors.back(), ReduceOp::Sum));
  }
  works.push_back(group->barrier_async());
  for (size_t k = works.size(); k-- > 0;) works[k]->wait();
  for (int k = 0; k < 8; ++k) {
    EXPECT_TRUE(works[static_cast<size_t>(k)]->is_completed());
    EXPECT_TRUE(testing::all_close(tensors[static_cast<size_t>(k)],
                                   full({1000 + k}, world * k + world * (world - 1) / 2.0), 0, 0));
  }
}

TEST_F(MpiCollectives, BarrierAndArgumentChecks) {
  group->barrier();
  EXPECT_ERROR_CONTAINS(group->broadcast(ones({2}), world), "expected a root rank in [0, ");
  EXPECT_ERROR_CONTAINS(group->all_gather(zeros({3}), ones({3})), "all_gather: expected output");
  EXPECT_ERROR_CONTAINS(group->all_reduce(ones({4}, kInt64), ReduceOp::Average),
                        "average needs a floating-point tensor");
  group->barrier();
}

}  // namespace
}  // namespace minidl
