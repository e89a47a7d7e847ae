// The main of minidl_distributed_mpi_tests, run under mpirun (label mpi): every rank runs every
// test, and the tests call collectives, so they must run in the same order on every rank (no
// filters that differ between ranks, no early returns between collectives). Rank 0 prints the
// usual GoogleTest output; the other ranks print only their failures, prefixed with their rank.
#include <gtest/gtest.h>

#include <cstdio>

#include "minidl/distributed/distributed.h"

namespace {

class FailuresOnlyPrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnlyPrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  minidl::distributed::init();
  const int rank = minidl::distributed::rank();
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnlyPrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  // Every rank returns the same status, so a failure on any rank fails the run everywhere.
  minidl::Tensor status = minidl::tensor(std::vector<int32_t>{failed});
  minidl::distributed::default_process_group()->all_reduce(status,
                                                           minidl::distributed::ReduceOp::Max);
  failed = minidl::to_vector<int32_t>(status)[0];
  minidl::distributed::finalize();
  return failed;
}
