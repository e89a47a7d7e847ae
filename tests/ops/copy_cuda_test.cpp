// The CUDA element copy and fill (ops/cuda/copy.cu, walked in the destination's memory order:
// Note [Element-wise geometry]) against the CPU's: layout-changing copies with and without a
// dtype change, broadcast and permuted sources, fills into strided views, a copy large enough
// for the grid-stride loop to wrap, and the limit on unmergeable dimensions.
#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::same_layout_on_cuda;
using testing::wiggly;

// dst (a CUDA tensor of `dtype` laid out in `format`) copied from src on the device, against
// the same copy on the CPU: the same values, bit for bit (conversions round the same way).
void expect_copy_matches_cpu(const Tensor& src, DType dtype, MemoryFormat format) {
  Tensor cpu_dst = empty(src.sizes(), TensorOptions(dtype), format);
  cpu_dst.copy_(src);
  Tensor gpu_dst = empty(src.sizes(), TensorOptions(dtype).device(Device(kCUDA)), format);
  gpu_dst.copy_(same_layout_on_cuda(src));
  EXPECT_TRUE(gpu_dst.is_contiguous(format));
  EXPECT_TRUE(all_close(gpu_dst.cpu().to(kFloat32), cpu_dst.to(kFloat32), 0, 0))
      << src.dtype() << " " << shape_str(src.sizes()) << " -> " << dtype;
}

TEST(CopyCuda, LayoutChangingCopiesWithAndWithoutADtypeChange) {
  SKIP_WITHOUT_CUDA();
  const Tensor nchw = wiggly({4, 6, 5, 7}, 0.1);
  const Tensor nhwc = nchw.contiguous(MemoryFormat::ChannelsLast);
  for (DType dtype : {kFloat32, kBFloat16, kFloat16}) {
    expect_copy_matches_cpu(nchw, dtype, MemoryFormat::ChannelsLast);  // autocast's conv input
    expect_copy_matches_cpu(nhwc, dtype, MemoryFormat::Contiguous);
    expect_copy_matches_cpu(nchw, dtype, MemoryFormat::Contiguous);  // a flat conversion
    expect_copy_matches_cpu(nchw.to(kBFloat16), dtype, MemoryFormat::ChannelsLast);
  }
  // Into integers and bool too.
  expect_copy_matches_cpu(nchw.mul(10.0), kInt32, MemoryFormat::ChannelsLast);
  expect_copy_matches_cpu(nchw, kBool, MemoryFormat::ChannelsLast);
}

TEST(CopyCuda, PermutedAndBroadcastSources) {
  SKIP_WITHOUT_CUDA();
  // A permuted view: dims in an order neither layout has.
  const Tensor permuted = wiggly({5, 4, 7, 6}, 0.2).permute({0, 3, 1, 2});  // [5, 6, 4, 7]
  for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
    expect_copy_matches_cpu(permuted, kBFloat16, format);
  // A per-channel source expanded over the batch and the spatial dims (zero strides).
  const Tensor per_channel = wiggly({1, 6, 1, 1}, 0.3).expand({3, 6, 4, 5});
  for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
    expect_copy_matches_cpu(per_channel, kFloat16, format);
}

TEST(CopyCuda, FillsStridedViews) {
  SKIP_WITHOUT_CUDA();
  Tensor channels_last = empty({2, 3, 4, 5}, TensorOptions(kBFloat16).device(Device(kCUDA)),
                               MemoryFormat::ChannelsLast);
  channels_last.fill_(-2.5);
  EXPECT_TRUE(all_close(channels_last.cpu().to(kFloat32), full({2, 3, 4, 5}, -2.5), 0, 0));
  Tensor grid = zeros({6, 8}, Device(kCUDA));
  grid.narrow(1, 2, 3).fill_(7.0);  // a column block: rows 8 apart
  Tensor expected = zeros({6, 8});
  expected.narrow(1, 2, 3).fill_(7.0);
  EXPECT_TRUE(all_close(grid.cpu(), expected, 0, 0));
}

TEST(CopyCuda, ALargeLayoutChangeCoversEveryElement) {
  SKIP_WITHOUT_CUDA();
  // 6.4 million elements: more than the grid's threads, so the grid-stride loop wraps.
  const Tensor nchw = wiggly({32, 64, 56, 56}, 0.4);
  expect_copy_matches_cpu(nchw, kBFloat16, MemoryFormat::ChannelsLast);
}

TEST(CopyCuda, TooManyUnmergeableDimensionsIsAnError) {
  SKIP_WITHOUT_CUDA();
  // Nine dimensions of size 2 cut from size 4: no dimension is contiguous with the one inside.
  const Shape sizes(9, 2);
  Tensor corner = zeros(Shape(9, 4), Device(kCUDA));
  for (int64_t d = 0; d < 9; ++d) corner = corner.narrow(d, 0, 2);
  EXPECT_ERROR_CONTAINS(corner.copy_(wiggly(sizes).cuda()),
                        "at most 8 dimensions are supported after merging contiguous ones, got 9");
}

}  // namespace
}  // namespace minidl
