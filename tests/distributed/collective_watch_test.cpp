// The NCCL watchdog's look at its queued collectives (distributed/collective_watch.h), with
// queries the test controls: finished collectives are dropped, a late one is a timeout, and a
// query that throws (a device fault in cudaEventQuery) becomes the group's error, naming the
// collective, instead of leaving the watchdog thread.
#include "minidl/distributed/collective_watch.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "minidl/core/error.h"

namespace minidl::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const Clock::time_point kNow = Clock::now();
const Clock::time_point kLater = kNow + std::chrono::hours(1);
const Clock::time_point kEarlier = kNow - std::chrono::seconds(1);

WatchedCollective collective(std::function<bool()> finished, Clock::time_point deadline,
                             std::string description) {
  return {std::move(finished), deadline, std::move(description)};
}

std::vector<std::string> descriptions(const std::vector<WatchedCollective>& watched) {
  std::vector<std::string> names;
  for (const WatchedCollective& c : watched) names.push_back(c.description);
  return names;
}

TEST(CollectiveWatch, DropsFinishedCollectivesAndKeepsTheOthers) {
  std::vector<WatchedCollective> watched = {
      collective([] { return true; }, kLater, "all_reduce #1"),
      collective([] { return false; }, kLater, "all_reduce #2"),
      collective([] { return true; }, kEarlier, "broadcast #3"),  // late, but finished
  };
  EXPECT_EQ(check_watched_collectives(watched, kNow, 0, milliseconds(300000)), "");
  EXPECT_EQ(descriptions(watched), std::vector<std::string>{"all_reduce #2"});
}

TEST(CollectiveWatch, ACollectivePastItsDeadlineIsATimeoutNamingIt) {
  std::vector<WatchedCollective> watched = {
      collective([] { return false; }, kLater, "all_reduce #1"),
      collective([] { return false; }, kEarlier, "all_gather #2"),
  };
  const std::string error = check_watched_collectives(watched, kNow, 3, milliseconds(1500));
  EXPECT_EQ(error,
            "rank 3: all_gather #2 timed out after 1.5 s (MINIDL_COLLECTIVE_TIMEOUT_S); a peer "
            "did not arrive or has failed");
  EXPECT_EQ(watched.size(), 2u);
}

TEST(CollectiveWatch, AQueryThatThrowsBecomesTheErrorNamingTheCollective) {
  std::vector<WatchedCollective> watched = {
      collective([] { return true; }, kLater, "broadcast #1"),
      collective([] { return false; }, kEarlier, "all_reduce #2"),  // a timeout too
      collective([]() -> bool { throw Error("cudaEventQuery: an illegal memory access"); }, kLater,
                 "reduce_scatter of 8 x float32 (collective #3)"),
      collective([]() -> bool { throw std::runtime_error("a second fault"); }, kLater,
                 "all_reduce #4"),
  };
  std::string error;
  ASSERT_NO_THROW(error = check_watched_collectives(watched, kNow, 1, milliseconds(1000)));
  // The fault, not the timeout it causes elsewhere, and the first one only.
  EXPECT_EQ(error,
            "rank 1: reduce_scatter of 8 x float32 (collective #3) failed on the device: "
            "cudaEventQuery: an illegal memory access");
  EXPECT_EQ(descriptions(watched), (std::vector<std::string>{"all_reduce #2",
                                                             "reduce_scatter of 8 x float32 "
                                                             "(collective #3)",
                                                             "all_reduce #4"}));
}

TEST(CollectiveWatch, AQueryThatThrowsSomethingElseIsCaughtToo) {
  std::vector<WatchedCollective> watched = {
      collective([]() -> bool { throw 42; }, kLater, "barrier #1"),
  };
  EXPECT_EQ(check_watched_collectives(watched, kNow, 0, milliseconds(1000)),
            "rank 0: barrier #1 failed on the device: an exception that is not a std::exception");
}

}  // namespace
}  // namespace minidl::distributed
