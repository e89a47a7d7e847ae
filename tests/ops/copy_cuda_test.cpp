// The CUDA element copy and fill (ops/cuda/copy.cu, walked in the destination's memory order:
// Note [Element-wise geometry]) against the CPU's: layout-changing copies with and without a
// dtype change, broadcast and permuted sources, fills into strided views, a copy large enough
// for the grid-stride loop to wrap, the limit on unmergeable dimensions, and float16
// conversions (the device's conversion instructions against the CPU's bit-level code).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "minidl/core/half.h"
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

TEST(CopyCuda, ToKeepsTheLayoutAndEveryBitBetweenHostAndDevice) {
  SKIP_WITHOUT_CUDA();
  // cuda() and cpu() keep a channels-last tensor channels-last (PyTorch's preserve_format), with
  // the same bytes.
  const Tensor nhwc = wiggly({4, 6, 5, 7}, 0.1).contiguous(MemoryFormat::ChannelsLast);
  const Tensor on_gpu = nhwc.cuda();
  EXPECT_TRUE(on_gpu.is_contiguous(MemoryFormat::ChannelsLast));
  const Tensor back = on_gpu.cpu();
  EXPECT_TRUE(back.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::bitwise_equal(back, nhwc));
  // A strided copy within one dtype moves bits, not values: a float16 NaN keeps its payload (a
  // trip through float would make it CUDA's canonical NaN), -0 keeps its sign.
  const double nan = std::nan("");
  const Tensor h =
      from_host(std::vector<double>{nan, -0.0, 1.5, -nan, INFINITY, 3.0}.data(), {2, 3}, kFloat64)
          .to(kFloat16);
  for (const Tensor& x : {h, h.to(kBFloat16)}) {
    const Tensor round_trip = x.cuda().t().contiguous().t().contiguous().cpu();
    EXPECT_TRUE(testing::bitwise_equal(round_trip, x)) << x.dtype();
  }
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

// The raw 16-bit patterns of a float16 tensor on the CPU.
std::vector<uint16_t> half_bits(const Tensor& t) {
  const Tensor host = t.cpu().contiguous();
  std::vector<uint16_t> bits(static_cast<size_t>(host.numel()));
  std::memcpy(bits.data(), host.data_ptr(), bits.size() * sizeof(uint16_t));
  return bits;
}

TEST(CopyCuda, Float16ConversionsMatchTheCpuBitForBit) {
  SKIP_WITHOUT_CUDA();
  // Every float16 to float32.
  std::vector<Half> every_half(1 << 16);
  for (uint32_t i = 0; i < every_half.size(); ++i)
    every_half[i] = Half::from_bits(static_cast<uint16_t>(i));
  const Tensor halves = from_host(every_half.data(), {1 << 16}, kFloat16);
  const std::vector<float> cpu_floats = to_vector<float>(halves.to(kFloat32));
  const std::vector<float> gpu_floats = to_vector<float>(halves.cuda().to(kFloat32));
  for (size_t i = 0; i < cpu_floats.size(); ++i) {
    if (std::isnan(cpu_floats[i])) {
      EXPECT_TRUE(std::isnan(gpu_floats[i])) << "float16 bits " << i;
      continue;
    }
    ASSERT_EQ(std::memcmp(&cpu_floats[i], &gpu_floats[i], sizeof(float)), 0)
        << "float16 bits " << i << ": " << gpu_floats[i] << " vs " << cpu_floats[i];
  }
  // float32 to float16 over every exponent and sign: mantissas whose dropped 13 bits are a tie
  // (0x1000), just below or above one, or none, so rounding to even, subnormals, overflow to
  // infinity and NaN are all met.
  std::vector<float> floats;
  for (uint32_t high = 0; high < (1u << 19); ++high)
    for (uint32_t low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) {
      const uint32_t bits = (high << 13) | low;
      float value;
      std::memcpy(&value, &bits, sizeof value);
      floats.push_back(value);
    }
  const Tensor source = from_host(floats.data(), {static_cast<int64_t>(floats.size())}, kFloat32);
  const std::vector<uint16_t> cpu_halves = half_bits(source.to(kFloat16));
  const std::vector<uint16_t> gpu_halves = half_bits(source.cuda().to(kFloat16));
  for (size_t i = 0; i < floats.size(); ++i) {
    const bool cpu_nan = (cpu_halves[i] & 0x7fffu) > 0x7c00u;
    if (cpu_nan) {
      EXPECT_GT(gpu_halves[i] & 0x7fffu, 0x7c00u) << floats[i];
      continue;
    }
    ASSERT_EQ(gpu_halves[i], cpu_halves[i]) << "float32 " << floats[i];
  }
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
