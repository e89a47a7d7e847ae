#pragma once
// How batch norm's per-channel reductions on CUDA (ops/cuda/norm.cu: the batch statistics
// forward, the gradient sums backward) cut a channel's values among blocks and threads, in plain
// C++ so that the arithmetic is written once and checked by CPU tests (tests/ops/norm_test.cpp:
// every value of every channel is folded by exactly one thread).
//
// A channel's M = N * S values (its "rows") are cut into `splits` ranges of `range_length`, one
// grid row each (blockIdx.y); blockIdx.x picks the channels. Three block shapes, chosen for
// coalesced reads:
//   planes         (channels outside the spatial dims): a block of kPlaneThreads per channel and
//                  range; its threads read a plane's consecutive values.
//   columns        (channels innermost): a block of (kTileChannels, kTileRows) threads per tile of
//                  channels and range; threadIdx.x walks neighbouring channels of one row.
//   column vectors (channels innermost, C a multiple of the vector width and every operand
//                  aligned): a block of (kVectorColumns, kVectorRows) threads, each folding
//                  `width` neighbouring channels from one 16-byte load per row, so a warp reads
//                  four rows of 128 bytes per access where the columns shape read 64 (bfloat16).
#include <algorithm>
#include <cstdint>

#include "minidl/core/ceil_div.h"
#include "minidl/core/macros.h"
#include "minidl/ops/norm_math.h"

namespace minidl::cuda {

inline constexpr int kPlaneThreads = 256;
inline constexpr int kTileChannels = 32;
inline constexpr int kTileRows = 8;
inline constexpr int kVectorColumns = 8;
inline constexpr int kVectorRows = 32;
// A block reads at least this many values of a range, so cutting channels into ranges pays for
// the extra partial results.
inline constexpr int64_t kMinRangeElements = 4096;
// At most this many ranges per channel (the finishing kernel merges them, and they are the grid's
// y dimension).
inline constexpr int64_t kMaxSplits = 1024;
// The reduction's target occupancy: blocks per multiprocessor.
inline constexpr int64_t kReductionBlocksPerMultiprocessor = 4;

enum class ChannelReductionShape { kPlanes, kColumns, kColumnVectors };

struct ChannelReductionPlan {
  ChannelReductionShape shape;
  int width;               // channels one thread folds: the vector width, else 1
  int64_t channel_blocks;  // grid.x
  int64_t splits;          // grid.y: the ranges each channel's values are cut into
  int64_t range_length;    // values (rows) of a channel per range; the last range may be shorter

  // Range `split`'s rows: [range_begin, range_end) of a channel's `count` values.
  MINIDL_HOST_DEVICE int64_t range_begin(int64_t split) const { return split * range_length; }
  MINIDL_HOST_DEVICE int64_t range_end(int64_t split, int64_t count) const {
    const int64_t end = range_begin(split) + range_length;
    return end < count ? end : count;
  }
  // The first of the `width` channels that thread column `column` of block `block` folds (the
  // columns shapes; the planes shape folds channel `block`). At or past C: the thread folds none.
  MINIDL_HOST_DEVICE int64_t first_channel(int64_t block, int column) const {
    const int64_t columns =
        shape == ChannelReductionShape::kColumnVectors ? kVectorColumns : kTileChannels;
    return (block * columns + column) * width;
  }
};

// The plan for `layout` on a GPU of `multiprocessors`; `vector_width` > 1 when every operand of
// the reduction is aligned to vectors of that many elements (core/cuda/vector_access.h), which
// the column-vectors shape needs besides channels innermost and C a multiple of it.
inline ChannelReductionPlan plan_channel_reduction(const norm::ChannelLayout& layout,
                                                   int vector_width, int64_t multiprocessors) {
  ChannelReductionPlan plan{ChannelReductionShape::kPlanes, 1, layout.channels, 1, 0};
  int64_t channels_per_block = 1;
  if (layout.channels_inner()) {
    if (vector_width > 1 && layout.vectors_fit(vector_width)) {
      plan.shape = ChannelReductionShape::kColumnVectors;
      plan.width = vector_width;
      channels_per_block = int64_t{kVectorColumns} * vector_width;
    } else {
      plan.shape = ChannelReductionShape::kColumns;
      channels_per_block = kTileChannels;
    }
    plan.channel_blocks = ceil_div(layout.channels, channels_per_block);
  }
  const int64_t min_range = std::max<int64_t>(1, kMinRangeElements / channels_per_block);
  const int64_t target_blocks = kReductionBlocksPerMultiprocessor * multiprocessors;
  plan.splits = std::clamp<int64_t>(
      std::min(ceil_div(target_blocks, std::max<int64_t>(plan.channel_blocks, 1)),
               layout.count() / min_range),
      1, kMaxSplits);
  plan.range_length = ceil_div(layout.count(), plan.splits);
  return plan;
}

}  // namespace minidl::cuda
