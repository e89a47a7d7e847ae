// core/profiler.h: what a profile records (ops on the profiling thread with self times, events
// from any thread) and what it leaves out.
#include "minidl/core/profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "minidl/minidl.h"

namespace minidl {
namespace {

std::map<std::string, OpProfiler::Record> by_name(const std::vector<OpProfiler::Record>& records) {
  std::map<std::string, OpProfiler::Record> named;
  for (const auto& record : records) named[record.name] = record;
  return named;
}

TEST(OpProfiler, RecordsNothingWithoutAProfiler) {
  { const ProfileScope before("before"); }
  OpProfiler profiler;
  { const ProfileScope during("during"); }
  const auto ops = by_name(profiler.ops());
  EXPECT_EQ(ops.count("before"), 0u);
  ASSERT_EQ(ops.count("during"), 1u);
  EXPECT_EQ(ops.at("during").calls, 1);
}

TEST(OpProfiler, ANestedScopesTimeIsNotItsOuterScopes) {
  OpProfiler profiler;
  {
    const ProfileScope outer("outer");
    const ProfileScope inner("inner");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  const auto ops = by_name(profiler.ops());
  EXPECT_GE(ops.at("inner").self_ms, 30.0);
  EXPECT_LT(ops.at("outer").self_ms, ops.at("inner").self_ms);
  EXPECT_EQ(profiler.ops().front().name, "inner");  // longest first
}

TEST(OpProfiler, AScopeJustInsideOneOfTheSameNameIsPartOfThatCall) {
  OpProfiler profiler;
  {
    const ProfileScope node("ReluBackward");
    const ProfileScope kernel("ReluBackward");
  }
  EXPECT_EQ(by_name(profiler.ops()).at("ReluBackward").calls, 1);
}

TEST(OpProfiler, ScopesOnOtherThreadsAreLeftOutAndEventsCounted) {
  OpProfiler profiler;
  std::thread worker([] {
    const ProfileScope scope("worker scope");
    const ProfileEvent event("worker event");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  worker.join();
  { const ProfileEvent event("worker event"); }
  EXPECT_EQ(by_name(profiler.ops()).count("worker scope"), 0u);
  const auto events = by_name(profiler.events());
  ASSERT_EQ(events.count("worker event"), 1u);
  EXPECT_EQ(events.at("worker event").calls, 2);
  EXPECT_GE(events.at("worker event").self_ms, 5.0);
}

TEST(OpProfiler, OneAtATime) {
  OpProfiler profiler;
  try {
    OpProfiler second;
    FAIL() << "a second profiler was made while the first was recording";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another profiler is recording"), std::string::npos)
        << e.what();
  }
}

TEST(OpProfiler, AFreshProfilerStartsEmpty) {
  {
    OpProfiler first;
    const ProfileScope scope("first");
  }
  OpProfiler second;
  EXPECT_TRUE(second.ops().empty());
  EXPECT_TRUE(second.events().empty());
}

TEST(OpProfiler, ATrainingStepRecordsItsOpsAndBackwardNodes) {
  manual_seed(0);
  nn::Linear layer(4, 3);
  const Tensor x = randn({8, 4});
  OpProfiler profiler;
  Tensor loss = relu(layer->forward(x)).sum();
  loss.backward();
  const auto ops = by_name(profiler.ops());
  for (const char* name : {"gemm", "relu", "sum", "ReluBackward"})
    EXPECT_EQ(ops.count(name), 1u) << name << " not in the profile";
  EXPECT_EQ(ops.at("relu").calls, 1);
  EXPECT_EQ(ops.at("ReluBackward").calls, 1);
  double total_ms = 0;
  for (const auto& [name, op] : ops) {
    EXPECT_GE(op.self_ms, 0.0) << name;
    total_ms += op.self_ms;
  }
  EXPECT_GT(total_ms, 0.0);
}

}  // namespace
}  // namespace minidl
