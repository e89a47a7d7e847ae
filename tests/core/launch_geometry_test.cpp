// ceil_div (core/ceil_div.h), the CUDA launchers' grid sizes (core/cuda/launch_geometry.h) and
// vectorised access (core/cuda/vector_access.h), checked on the CPU: exact at the int64 edges,
// for element counts around 2^31 and 2^32 a grid that fits CUDA's limits and a grid-stride loop
// that reaches every element, and vectors of 16 bytes only from addresses aligned to them.
#include "minidl/core/cuda/launch_geometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "minidl/core/ceil_div.h"
#include "minidl/core/cuda/vector_access.h"
#include "test_util.h"

namespace minidl {
namespace {

using cuda::checked_grid_x;
using cuda::grid_stride_blocks;
using cuda::kMaxGridX;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

static_assert(ceil_div(10, 3) == 4, "ceil_div is usable in constant expressions");

TEST(CeilDiv, RoundsUpForEveryNonNegativeNumeratorOfASmallRange) {
  for (int64_t b = 1; b <= 40; ++b) {
    for (int64_t a = 0; a <= 1000; ++a) {
      const int64_t q = ceil_div(a, b);
      EXPECT_GE(q * b, a) << a << " / " << b;
      EXPECT_LT((q - 1) * b, a == 0 ? 1 : a) << a << " / " << b;
    }
  }
}

TEST(CeilDiv, DoesNotOverflowNearTheLargestInt64) {
  // (a + b - 1) / b overflows for each of these.
  EXPECT_EQ(ceil_div(kInt64Max, 1), kInt64Max);
  EXPECT_EQ(ceil_div(kInt64Max, 2), int64_t{1} << 62);
  EXPECT_EQ(ceil_div(kInt64Max - 1, kInt64Max), 1);
  EXPECT_EQ(ceil_div(kInt64Max, kInt64Max), 1);
}

// Element counts around the 32-bit boundaries, where an int or unsigned somewhere in the grid
// arithmetic would wrap.
std::vector<int64_t> counts_around_32_bits() {
  std::vector<int64_t> counts{1, 255, 256, 257, 65535 * 256, 65536 * 256 + 1};
  for (int shift : {31, 32, 33, 40})
    for (int64_t delta : {-1, 0, 1}) counts.push_back((int64_t{1} << shift) + delta);
  return counts;
}

TEST(GridStrideBlocks, FitTheGridLimitAndReachEveryElementAround32BitCounts) {
  // The caps the launchers use: 8 or 4 blocks per multiprocessor of a 132-SM H100, the fixed
  // caps of dropout, random and shape, and the largest grid CUDA launches.
  const std::vector<int64_t> caps{1, 4 * 132, 8 * 132, 4096, 65536, kMaxGridX};
  for (int64_t numel : counts_around_32_bits()) {
    for (int64_t threads : {128, 256, 512, 1024}) {
      for (int64_t cap : caps) {
        const unsigned blocks = grid_stride_blocks(numel, threads, cap);
        // Every value here fits in int64: at most 2^40 elements, 2^31 blocks, 2^10 threads.
        const int64_t wanted = numel / threads + (numel % threads != 0 ? 1 : 0);
        const int64_t step = static_cast<int64_t>(blocks) * threads;
        SCOPED_TRACE(::testing::Message() << "numel " << numel << ", " << threads
                                          << " threads, at most " << cap << " blocks");
        EXPECT_GE(blocks, 1u);
        EXPECT_LE(blocks, static_cast<uint64_t>(cap));
        EXPECT_LE(blocks, static_cast<uint64_t>(kMaxGridX));
        // One element per thread when that fits, else every allowed block.
        EXPECT_EQ(static_cast<int64_t>(blocks), std::min(wanted, cap));
        if (wanted <= cap) {
          EXPECT_GE(step, numel);            // one pass reaches every element
          EXPECT_LT(step - threads, numel);  // and no block is idle
        }
        // The loop's 64-bit index runs up to numel - 1 + step, which must not overflow.
        EXPECT_LE(step, kInt64Max - (numel - 1));
      }
    }
  }
}

TEST(GridStrideBlocks, AnEmptyLaunchStillGetsOneBlock) {
  EXPECT_EQ(grid_stride_blocks(0, 256, 1056), 1u);
}

TEST(CheckedGridX, PassesCountsUpToTheLimitAndRefusesLargerOnesNamingTheOp) {
  EXPECT_EQ(checked_grid_x(0, "sum"), 0u);
  EXPECT_EQ(checked_grid_x(kMaxGridX, "sum"), 2147483647u);
  EXPECT_ERROR_CONTAINS(checked_grid_x(kMaxGridX + 1, "sum"),
                        "sum: expected a CUDA grid of at most 2147483647 blocks, but this input "
                        "needs 2147483648");
  // 2^32 + 5 blocks would wrap to a grid of 5 and leave almost every row undone.
  EXPECT_ERROR_CONTAINS(checked_grid_x((int64_t{1} << 32) + 5, "sum"), "needs 4294967301");
  // softmax over rows of one element, 8 rows per block: 2^34 rows need 2^31 blocks.
  EXPECT_ERROR_CONTAINS(checked_grid_x(ceil_div(int64_t{1} << 34, 8), "softmax"),
                        "softmax: expected a CUDA grid");
}

TEST(VectorWidth, SixteenBytesOfTheWidestOperand) {
  EXPECT_EQ(cuda::vector_width(1), 16);  // bool and uint8
  EXPECT_EQ(cuda::vector_width(2), 8);   // bfloat16 and float16
  EXPECT_EQ(cuda::vector_width(4), 4);   // float32 (and a bool result of float32 operands)
  EXPECT_EQ(cuda::vector_width(8), 2);   // float64 and int64
  EXPECT_EQ(cuda::vector_width(16), 1);
  EXPECT_EQ(cuda::vector_width(32), 1);  // wider than a vector: one element at a time
}

TEST(VectorAligned, OnlyAddressesOnTheVectorsBoundary) {
  alignas(64) static unsigned char buffer[128];
  // bfloat16 by 8 and float32 by 4 are 16-byte vectors; bool by 4 (beside float32) 4 bytes.
  EXPECT_TRUE(cuda::vector_aligned(buffer, 8, 2));
  EXPECT_TRUE(cuda::vector_aligned(buffer + 16, 8, 2));
  EXPECT_FALSE(cuda::vector_aligned(buffer + 2, 8, 2));  // a view one bfloat16 in
  EXPECT_FALSE(cuda::vector_aligned(buffer + 8, 4, 4));
  EXPECT_TRUE(cuda::vector_aligned(buffer + 32, 4, 4));
  EXPECT_TRUE(cuda::vector_aligned(buffer + 4, 4, 1));
  EXPECT_FALSE(cuda::vector_aligned(buffer + 2, 4, 1));
  EXPECT_TRUE(cuda::vector_aligned(buffer + 3, 1, 1));  // width 1: any element address
}

}  // namespace
}  // namespace minidl
