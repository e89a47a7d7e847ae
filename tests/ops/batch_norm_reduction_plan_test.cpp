// How batch norm's CUDA reductions cut their work (ops/cuda/batch_norm_reduction_plan.h), checked
// on the CPU: the shape each layout takes, every value of every channel folded by exactly one
// thread (ranges and channel columns as the kernels walk them), and grids CUDA can launch.
#include "minidl/ops/cuda/batch_norm_reduction_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "minidl/core/cuda/launch_geometry.h"

namespace minidl::cuda {
namespace {

struct PlanCase {
  norm::ChannelLayout layout;
  const char* what;
};

std::vector<PlanCase> plan_cases() {
  return {
      {{2, 3, 25, 75, 25, 1}, "NCHW, small"},
      {{32, 16, 1024, 16384, 1024, 1}, "NCHW, long planes"},
      {{2, 3, 25, 75, 1, 3}, "NHWC, 3 channels"},
      {{512, 64, 1024, 65536, 1, 64}, "NHWC, ResNet-18's first stage"},
      {{512, 512, 16, 8192, 1, 512}, "NHWC, ResNet-18's last stage"},
      {{4, 24, 16, 384, 1, 24}, "NHWC, 24 channels"},
      {{4, 136, 16, 2176, 1, 136}, "NHWC, 136 channels (a part tile)"},
      {{4096, 3, 1, 3, 1, 3}, "[N, C], long batch"},
      {{16, 40, 1, 40, 1, 40}, "[N, C], 40 channels"},
  };
}

ChannelReductionShape expected_shape(const norm::ChannelLayout& layout, int width) {
  if (!layout.channels_inner()) return ChannelReductionShape::kPlanes;
  return width > 1 && layout.channels % width == 0 ? ChannelReductionShape::kColumnVectors
                                                   : ChannelReductionShape::kColumns;
}

TEST(BatchNormReductionPlan, TakesTheShapeOfItsLayoutAndAlignment) {
  for (const auto& [layout, what] : plan_cases()) {
    for (const int width : {1, 4, 8}) {
      const ChannelReductionPlan plan = plan_channel_reduction(layout, width, 132);
      const std::string where = std::string(what) + ", vectors of " + std::to_string(width);
      EXPECT_EQ(plan.shape, expected_shape(layout, width)) << where;
      EXPECT_EQ(plan.width, plan.shape == ChannelReductionShape::kColumnVectors ? width : 1)
          << where;
    }
  }
}

// Every (row, channel) is folded once: the ranges tile [0, count) (the splits), and the channels
// of the block columns and their lanes tile [0, C), as the kernels walk them.
TEST(BatchNormReductionPlan, FoldsEveryValueOfEveryChannelExactlyOnce) {
  for (const auto& [layout, what] : plan_cases()) {
    for (const int width : {1, 4, 8}) {
      for (const int64_t multiprocessors : {1, 16, 132}) {
        const ChannelReductionPlan plan = plan_channel_reduction(layout, width, multiprocessors);
        const std::string where = std::string(what) + ", vectors of " + std::to_string(width) +
                                  ", " + std::to_string(multiprocessors) + " multiprocessors";
        std::vector<int> rows_folded(static_cast<size_t>(layout.count()), 0);
        for (int64_t split = 0; split < plan.splits; ++split)
          for (int64_t m = plan.range_begin(split); m < plan.range_end(split, layout.count()); ++m)
            ++rows_folded[static_cast<size_t>(m)];
        EXPECT_EQ(rows_folded, std::vector<int>(rows_folded.size(), 1)) << where;

        std::vector<int> channels_folded(static_cast<size_t>(layout.channels), 0);
        if (plan.shape == ChannelReductionShape::kPlanes) {
          EXPECT_EQ(plan.channel_blocks, layout.channels) << where;  // block c folds channel c
          channels_folded.assign(channels_folded.size(), 1);
        } else {
          const int columns =
              plan.shape == ChannelReductionShape::kColumnVectors ? kVectorColumns : kTileChannels;
          for (int64_t block = 0; block < plan.channel_blocks; ++block)
            for (int column = 0; column < columns; ++column) {
              const int64_t first = plan.first_channel(block, column);
              if (first >= layout.channels) continue;  // the kernels' idle threads
              // A vector's lanes stay within the row: C is a multiple of the width.
              ASSERT_LE(first + plan.width, layout.channels) << where;
              for (int lane = 0; lane < plan.width; ++lane)
                ++channels_folded[static_cast<size_t>(first + lane)];
            }
          // No block is all idle.
          EXPECT_LT(plan.first_channel(plan.channel_blocks - 1, 0), layout.channels) << where;
        }
        EXPECT_EQ(channels_folded, std::vector<int>(channels_folded.size(), 1)) << where;
      }
    }
  }
}

TEST(BatchNormReductionPlan, CutsRangesWithinCudasLimitsAndWorthTheirPartials) {
  for (const auto& [layout, what] : plan_cases()) {
    for (const int width : {1, 8}) {
      for (const int64_t multiprocessors : {1, 132, 100000}) {
        const ChannelReductionPlan plan = plan_channel_reduction(layout, width, multiprocessors);
        const std::string where = std::string(what) + ", vectors of " + std::to_string(width) +
                                  ", " + std::to_string(multiprocessors) + " multiprocessors";
        EXPECT_GE(plan.splits, 1) << where;
        EXPECT_LE(plan.splits, kMaxSplits) << where;
        EXPECT_LE(plan.splits, kMaxGridYZ) << where;
        EXPECT_LE(plan.channel_blocks, kMaxGridX) << where;
        // Cut only while each block of a range still reads kMinRangeElements values.
        const int64_t channels_per_block = plan.shape == ChannelReductionShape::kPlanes ? 1
                                           : plan.shape == ChannelReductionShape::kColumnVectors
                                               ? kVectorColumns * plan.width
                                               : kTileChannels;
        if (plan.splits > 1)
          EXPECT_GE(layout.count() / plan.splits * channels_per_block, kMinRangeElements) << where;
      }
    }
  }
  // ResNet-18's first stage on an H200's 132 multiprocessors: enough blocks for 4 per
  // multiprocessor, one tile of 64 bfloat16 channels per row.
  const ChannelReductionPlan first_stage =
      plan_channel_reduction({512, 64, 1024, 65536, 1, 64}, 8, 132);
  EXPECT_EQ(first_stage.channel_blocks, 1);
  EXPECT_EQ(first_stage.splits, 528);
  EXPECT_EQ(first_stage.range_length, 993);
}

}  // namespace
}  // namespace minidl::cuda
