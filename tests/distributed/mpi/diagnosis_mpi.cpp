// What a rank whose collective timed out says about its peers (distributed/mpi_diagnosis.h),
// from answers the test makes up: late ranks, a rank in another collective, one that left, one
// that did not answer, and one that has moved on. No collective is called: each rank runs these
// on its own. (The fault cases of the mpi label check the same text from real hangs.)
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "minidl/distributed/mpi_collective.h"
#include "minidl/distributed/mpi_diagnosis.h"

namespace minidl::distributed::detail {
namespace {

constexpr int64_t kAllReduce = static_cast<int64_t>(CollectiveKind::AllReduce);
constexpr int64_t kBroadcast = static_cast<int64_t>(CollectiveKind::Broadcast);

TEST(MpiDiagnosis, NamesTheRankThatHasNotArrivedAndThoseWaitingToo) {
  // Rank 1 skipped all_reduce #15 (the desync fault case).
  const CollectiveProgress mine{.entered = 15, .completed = 14, .current_kind = kAllReduce};
  const std::map<int, CollectiveProgress> replies = {
      {1, {.entered = 14, .completed = 14, .current_kind = kNotInCollective}},
      {2, {.entered = 15, .completed = 14, .current_kind = kAllReduce}},
      {3, {.entered = 15, .completed = 14, .current_kind = kAllReduce}}};
  EXPECT_EQ(explain_missing_ranks(0, 4, mine, {}, replies, std::chrono::seconds(2)),
            "rank not in this collective: 1; rank 1 has not arrived: it has started 14 "
            "collectives and is in no collective; rank 2 is in all_reduce #15 (waiting too); "
            "rank 3 is in all_reduce #15 (waiting too)");
}

TEST(MpiDiagnosis, NamesARankThatLeftOneInAnotherCollectiveAndOneThatDidNotAnswer) {
  const CollectiveProgress mine{.entered = 3, .completed = 2, .current_kind = kAllReduce};
  const std::map<int, int64_t> left_after = {{0, 2}};
  const std::map<int, CollectiveProgress> replies = {
      {2, {.entered = 3, .completed = 2, .current_kind = kBroadcast}}};
  EXPECT_EQ(explain_missing_ranks(1, 4, mine, left_after, replies, std::chrono::seconds(2)),
            "ranks not in this collective: 0 2 3; rank 0 has left the job after completing 2 "
            "collectives; rank 2 called a different collective: it is in broadcast #3; rank 3 "
            "did not answer within 2 s (dead, or stuck outside MPI)");
}

TEST(MpiDiagnosis, SaysWhenEveryRankIsThereAndOneHasMovedOn) {
  const CollectiveProgress mine{.entered = 5, .completed = 4, .current_kind = kBroadcast};
  const std::map<int, CollectiveProgress> replies = {
      {0, {.entered = 6, .completed = 6, .current_kind = kNotInCollective}},
      {2, {.entered = 5, .completed = 4, .current_kind = kBroadcast}}};
  EXPECT_EQ(explain_missing_ranks(1, 3, mine, {}, replies, std::chrono::milliseconds(500)),
            "every rank answered that it is in this collective; rank 0 has completed it and is "
            "in no collective; rank 2 is in broadcast #5 (waiting too)");
}

}  // namespace
}  // namespace minidl::distributed::detail
