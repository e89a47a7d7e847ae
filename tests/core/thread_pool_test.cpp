// parallel_for over minidl's own CPU threads (core/thread_pool.h): every index runs exactly once
// for any thread count and grain, a nested parallel_for runs inline, an exception in a chunk
// reaches the caller and leaves the pool usable, and threads calling at once all finish.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "minidl/core/error.h"
#include "minidl/core/parallel.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::ScopedThreadCount;

// How many times parallel_for visited each index of [0, n).
std::vector<int> visits(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
  parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) counts[static_cast<size_t>(i)].fetch_add(1);
  });
  std::vector<int> result;
  for (const auto& count : counts) result.push_back(count.load());
  return result;
}

TEST(ThreadPool, EveryIndexRunsOnceForAnyThreadCountAndGrain) {
  for (int64_t threads : {1, 2, 3, 8}) {
    ScopedThreadCount scoped(threads);
    EXPECT_EQ(get_num_threads(), threads);
    for (int64_t grain : {1, 7, 1000}) {
      for (int64_t n : {0, 1, 5, 1000, 12345}) {
        EXPECT_EQ(visits(n, grain), std::vector<int>(static_cast<size_t>(n), 1))
            << threads << " threads, grain " << grain << ", n " << n;
      }
    }
  }
}

TEST(ThreadPool, ChunksCoverContiguousRangesInOrderOfTheirIndex) {
  ScopedThreadCount scoped(4);
  std::vector<std::pair<int64_t, int64_t>> ranges(4);
  std::atomic<int> calls{0};
  parallel_for(10, 110, 25, [&](int64_t begin, int64_t end) {
    ranges[static_cast<size_t>((begin - 10) / 25)] = {begin, end};
    calls.fetch_add(1);
  });
  EXPECT_EQ(calls.load(), 4);
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {10, 35}, {35, 60}, {60, 85}, {85, 110}};
  EXPECT_EQ(ranges, expected);
}

TEST(ThreadPool, ANestedParallelForRunsInlineAndComplete) {
  ScopedThreadCount scoped(4);
  std::atomic<int64_t> sum{0};
  parallel_for(0, 8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
        // Inline: the whole inner range in one call.
        EXPECT_EQ(b, 0);
        EXPECT_EQ(e, 100);
        for (int64_t j = b; j < e; ++j) sum.fetch_add(j);
      });
    }
  });
  EXPECT_EQ(sum.load(), 8 * 4950);
}

TEST(ThreadPool, AnExceptionInAChunkReachesTheCallerAndThePoolStaysUsable) {
  ScopedThreadCount scoped(4);
  for (int attempt = 0; attempt < 20; ++attempt) {
    try {
      parallel_for(0, 400, 1, [&](int64_t begin, int64_t) {
        if (begin >= 300) throw std::runtime_error("chunk failed at " + std::to_string(begin));
      });
      FAIL() << "parallel_for returned although a chunk threw";
    } catch (const std::runtime_error& error) {
      EXPECT_EQ(std::string(error.what()), "chunk failed at 300");
    }
    EXPECT_EQ(visits(1000, 10), std::vector<int>(1000, 1));
  }
}

TEST(ThreadPool, ThreadsCallingAtOnceAllGetTheirWholeRange) {
  ScopedThreadCount scoped(2);
  constexpr int kCallers = 4;
  std::vector<int64_t> sums(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&sums, c] {
      for (int round = 0; round < 200; ++round) {
        std::atomic<int64_t> sum{0};
        parallel_for(0, 1000, 10, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
        });
        sums[static_cast<size_t>(c)] += sum.load();
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(sums, std::vector<int64_t>(kCallers, 200 * 499500));
}

TEST(ThreadPool, ACountBelowOneIsRefusedNamingIt) {
  EXPECT_ERROR_CONTAINS(set_num_threads(0),
                        "set_num_threads: expected a thread count of at least 1, got 0");
}

}  // namespace
}  // namespace minidl
