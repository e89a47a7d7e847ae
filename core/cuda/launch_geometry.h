#pragma once
// The grid-size arithmetic of the CUDA launchers, in plain C++ so that it is written once and
// checked by CPU tests (tests/core/launch_geometry_test.cpp): a grid that exceeds CUDA's limits
// fails to launch, and one truncated to 32 bits silently skips elements.
#include <algorithm>
#include <cstdint>

#include "minidl/core/ceil_div.h"
#include "minidl/core/error.h"

namespace minidl::cuda {

// The block size of minidl's one-thread-per-element and grid-stride kernels, and how many of
// those blocks a grid-stride launch keeps resident on each multiprocessor (2048 threads / 256).
inline constexpr int kThreadsPerBlock = 256;
inline constexpr int kBlocksPerMultiprocessor = 8;

// CUDA's limits on grid dimensions (every architecture minidl builds for).
inline constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxGridYZ = 65535;

// Blocks of `threads_per_block` for a grid-stride loop over `numel` elements: one element per
// thread when that takes at most `max_blocks` blocks, else `max_blocks` (the loop covers the
// rest); at least 1. `max_blocks` is at most kMaxGridX.
constexpr unsigned grid_stride_blocks(int64_t numel, int64_t threads_per_block,
                                      int64_t max_blocks) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min(ceil_div(numel, threads_per_block), max_blocks)));
}

// `blocks` as grid.x of a launch where each block owns a fixed share of the work (no
// grid-stride loop): fails, naming `op`, when CUDA cannot launch that many.
inline unsigned checked_grid_x(int64_t blocks, const char* op) {
  MINIDL_CHECK(blocks >= 0 && blocks <= kMaxGridX, op, ": expected a CUDA grid of at most ",
               kMaxGridX, " blocks, but this input needs ", blocks);
  return static_cast<unsigned>(blocks);
}

}  // namespace minidl::cuda
