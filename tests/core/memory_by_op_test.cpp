// Note [Peak memory by op] (core/cuda/memory_by_op.h): the ledger alone, the ops' names as
// ProfileScopes track them, and the caching allocator charging its blocks on a fake device (no
// GPU needed): what a peak held, per op, and what a reset or a late start of recording keeps.
#include "minidl/core/cuda/memory_by_op.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "fake_device_memory.h"
#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/error.h"
#include "minidl/core/profiler.h"

namespace minidl::cuda {

// How gtest prints a ledger's entry (found by argument-dependent lookup, so not in the
// anonymous namespace).
std::ostream& operator<<(std::ostream& out, const OpMemory& m) {
  return out << "{\"" << m.op << "\", " << m.bytes << " bytes, " << m.blocks << " blocks}";
}

namespace {

using namespace fake_device;

TEST(MemoryByOp, KeepsWhatEachOpHeldAtThePeakLargestFirst) {
  MemoryByOp ledger;
  const MemoryByOp::Owner conv = ledger.owner_of("conv2d");
  const MemoryByOp::Owner relu = ledger.owner_of("relu");
  EXPECT_EQ(ledger.owner_of("conv2d"), conv);  // one id per name
  ledger.add(conv, 100);
  ledger.add(relu, 300);
  ledger.add(conv, 50);
  ledger.keep_as_peak();
  ledger.remove(relu, 300);  // after the peak: not in it
  ledger.add(conv, 10);
  EXPECT_EQ(ledger.at_peak(), (std::vector<OpMemory>{{"relu", 300, 1}, {"conv2d", 150, 2}}));
  ledger.keep_as_peak();  // an op that held nothing is left out
  EXPECT_EQ(ledger.at_peak(), (std::vector<OpMemory>{{"conv2d", 160, 3}}));
}

TEST(MemoryByOp, ReturningBytesAnOpDoesNotHoldIsAnError) {
  MemoryByOp ledger;
  const MemoryByOp::Owner op = ledger.owner_of("add");
  ledger.add(op, 10);
  EXPECT_THROW(ledger.remove(op, 20), Error);
  EXPECT_THROW(ledger.remove(op + 1, 1), Error);
}

TEST(OpNameTracking, NamesTheInnermostOpenScopeOnlyWhileOn) {
  {
    ProfileScope untracked("conv2d");
    EXPECT_EQ(current_op_name(), "");  // off by default
  }
  set_op_name_tracking(true);
  EXPECT_EQ(current_op_name(), "");  // outside every scope
  {
    ProfileScope outer("Conv2dBackward");
    EXPECT_EQ(current_op_name(), "Conv2dBackward");
    {
      ProfileScope inner("sum");
      EXPECT_EQ(current_op_name(), "sum");
      std::string other_thread = "unset";
      std::thread([&other_thread] { other_thread = std::string(current_op_name()); }).join();
      EXPECT_EQ(other_thread, "");  // per thread
    }
    EXPECT_EQ(current_op_name(), "Conv2dBackward");
  }
  EXPECT_EQ(current_op_name(), "");
  set_op_name_tracking(false);
}

// Turns op-name tracking on for a test, and off after it.
struct TrackingOpNames {
  TrackingOpNames() { set_op_name_tracking(true); }
  ~TrackingOpNames() { set_op_name_tracking(false); }
};

TEST(CachingAllocatorByOp, ChargesEachBlockToTheOpThatAllocatedIt) {
  TrackingOpNames tracking;
  Fixture f;
  void* weights = f.allocator->allocate(4 * kMiB, kStreamA);  // before recording
  f.allocator->set_recording_by_op(true);
  EXPECT_TRUE(f.allocator->peak_by_op().empty());  // the peak so far is not known by op
  void* activation = nullptr;
  void* grad = nullptr;
  {
    ProfileScope op("conv2d");
    activation = f.allocator->allocate(12 * kMiB, kStreamA);
  }
  {
    ProfileScope op("Conv2dBackward");
    grad = f.allocator->allocate(12 * kMiB, kStreamA);
  }
  void* loose = f.allocator->allocate(1000, kStreamA);  // outside every op; rounded to 1024
  // The peak: 4 + 12 + 12 MiB + 1024 bytes.
  const std::vector<OpMemory> expected{{"Conv2dBackward", 12 * kMiB, 1},
                                       {"conv2d", 12 * kMiB, 1},
                                       {std::string(kBeforeRecording), 4 * kMiB, 1},
                                       {"", 1024, 1}};
  EXPECT_EQ(f.allocator->peak_by_op(), expected);
  EXPECT_EQ(f.allocator->stats().peak_allocated_bytes, 28 * kMiB + 1024);
  f.allocator->free(activation);
  {
    ProfileScope op("relu");
    void* below_peak = f.allocator->allocate(8 * kMiB, kStreamA);
    f.allocator->free(below_peak);
  }
  EXPECT_EQ(f.allocator->peak_by_op(), expected);  // not a new peak
  f.allocator->reset_peak_stats();                 // the peak is now what is in use
  EXPECT_EQ(f.allocator->peak_by_op(),
            (std::vector<OpMemory>{{"Conv2dBackward", 12 * kMiB, 1},
                                   {std::string(kBeforeRecording), 4 * kMiB, 1},
                                   {"", 1024, 1}}));
  f.allocator->set_recording_by_op(false);
  f.allocator->reset_peak_stats();
  EXPECT_TRUE(f.allocator->peak_by_op().empty());               // not recorded
  for (void* p : {weights, grad, loose}) f.allocator->free(p);  // charged blocks still return
}

TEST(CachingAllocatorByOp, RecordsNothingWhileOff) {
  TrackingOpNames tracking;
  Fixture f;
  ProfileScope op("conv2d");
  void* block = f.allocator->allocate(kMiB, kStreamA);
  EXPECT_TRUE(f.allocator->peak_by_op().empty());
  f.allocator->set_recording_by_op(true);  // a block from before: charged to kBeforeRecording
  void* next = f.allocator->allocate(kMiB, kStreamA);
  EXPECT_EQ(f.allocator->peak_by_op(),
            (std::vector<OpMemory>{{std::string(kBeforeRecording), kMiB, 1}, {"conv2d", kMiB, 1}}));
  for (void* p : {block, next}) f.allocator->free(p);
}

}  // namespace
}  // namespace minidl::cuda
