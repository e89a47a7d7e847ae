// The element loops' geometry (ops/iteration_shape.h, Note [Element-wise geometry]), which the
// CPU copy and every CUDA element-wise kernel and copy are given: dimensions ordered by the
// output's strides (so stores are unit-stride in any layout) and merged where contiguous. And
// the CPU copy that walks it: values right across layouts, dtypes and broadcasts.
#include "minidl/ops/iteration_shape.h"

#include <array>
#include <vector>

#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

using Strides = std::array<int64_t, 2>;

// The strides of a dense [N, C, H, W] tensor in channels-last (NHWC) memory order.
Shape channels_last_strides(const Shape& sizes) {
  const int64_t c = sizes[1], h = sizes[2], w = sizes[3];
  return {h * w * c, 1, w * c, c};
}

TEST(IterationShape, ContiguousToContiguousIsOneFlatDimension) {
  const Shape sizes{2, 3, 4, 5}, strides{60, 20, 5, 1};
  const IterationShape<2> shape = make_iteration_shape<2>(sizes, {&strides, &strides});
  ASSERT_EQ(shape.ndim(), 1);
  EXPECT_EQ(shape.sizes[0], 120);
  EXPECT_EQ(shape.strides[0], (Strides{1, 1}));
  EXPECT_TRUE(shape.is_flat());
}

TEST(IterationShape, NchwToChannelsLastStoresWithUnitStride) {
  // dst channels-last, src NCHW: the innermost dimension is C (dst stride 1, src reads H * W
  // apart); H and W merge (contiguous in both); N stays apart (C * H * W in both, but the
  // dimension inside it differs).
  const Shape sizes{2, 3, 4, 5};
  const Shape dst = channels_last_strides(sizes), src{60, 20, 5, 1};
  const IterationShape<2> shape = make_iteration_shape<2>(sizes, {&dst, &src});
  ASSERT_EQ(shape.ndim(), 3);
  EXPECT_EQ(shape.sizes, (std::vector<int64_t>{3, 20, 2}));
  EXPECT_EQ(shape.strides[0], (Strides{1, 20}));   // C
  EXPECT_EQ(shape.strides[1], (Strides{3, 1}));    // H * W
  EXPECT_EQ(shape.strides[2], (Strides{60, 60}));  // N
  EXPECT_FALSE(shape.is_flat());
}

TEST(IterationShape, ChannelsLastToNchwFollowsTheDestinationToo) {
  const Shape sizes{2, 3, 4, 5};
  const Shape dst{60, 20, 5, 1}, src = channels_last_strides(sizes);
  const IterationShape<2> shape = make_iteration_shape<2>(sizes, {&dst, &src});
  ASSERT_EQ(shape.ndim(), 3);
  EXPECT_EQ(shape.sizes, (std::vector<int64_t>{20, 3, 2}));
  EXPECT_EQ(shape.strides[0], (Strides{1, 3}));  // H * W, where dst is dense
}

TEST(IterationShape, BroadcastSourcesCarryZeroStridesThatMergeWithEachOther) {
  // A per-channel [1, C, 1, 1] source expanded over [N, C, H, W]: H and W merge in both
  // operands (the source's zero strides too), C and N do not.
  const Shape sizes{2, 3, 4, 5};
  const Shape dst{60, 20, 5, 1}, src{0, 1, 0, 0};
  const IterationShape<2> shape = make_iteration_shape<2>(sizes, {&dst, &src});
  ASSERT_EQ(shape.ndim(), 3);
  EXPECT_EQ(shape.sizes, (std::vector<int64_t>{20, 3, 2}));
  EXPECT_EQ(shape.strides[0], (Strides{1, 0}));
  EXPECT_EQ(shape.strides[1], (Strides{20, 1}));
  EXPECT_EQ(shape.strides[2], (Strides{60, 0}));
  // A scalar broadcast everywhere is one dimension, not flat (the source does not advance).
  const Shape scalar{0, 0, 0, 0};
  const IterationShape<2> fill = make_iteration_shape<2>(sizes, {&dst, &scalar});
  ASSERT_EQ(fill.ndim(), 1);
  EXPECT_EQ(fill.strides[0], (Strides{1, 0}));
  EXPECT_FALSE(fill.is_flat());
}

TEST(IterationShape, SizeOneDimensionsAreDroppedAndNoneLeftIsOneElement) {
  const Shape sizes{1, 4, 1}, dst{99, 1, 7}, src{5, 2, 3};
  const IterationShape<2> shape = make_iteration_shape<2>(sizes, {&dst, &src});
  ASSERT_EQ(shape.ndim(), 1);
  EXPECT_EQ(shape.strides[0], (Strides{1, 2}));
  const Shape ones{1, 1}, any{3, 8};
  const IterationShape<1> single = make_iteration_shape<1>(ones, {&any});
  EXPECT_EQ(single.ndim(), 0);
  EXPECT_TRUE(single.is_flat());
}

TEST(IterationShape, ATransposedDestinationIsWalkedInItsMemoryOrder) {
  // dst is the transpose view of a dense [3, 2] buffer: its dim 0 has stride 1.
  const Shape sizes{2, 3}, dst{1, 2}, src{3, 1};
  const IterationShape<2> shape = make_iteration_shape<2>(sizes, {&dst, &src});
  ASSERT_EQ(shape.ndim(), 2);
  EXPECT_EQ(shape.sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shape.strides[0], (Strides{1, 3}));
  EXPECT_EQ(shape.strides[1], (Strides{2, 1}));
}

// ---- the CPU copy, which walks this geometry ----

TEST(CpuCopy, LayoutAndDtypeChangesKeepEveryValue) {
  const Tensor x = wiggly({2, 3, 4, 5}, 0.1);
  for (DType dtype : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    Tensor channels_last = empty(x.sizes(), TensorOptions(dtype), MemoryFormat::ChannelsLast);
    channels_last.copy_(x);
    ASSERT_TRUE(channels_last.is_contiguous(MemoryFormat::ChannelsLast));
    // Memory order: channels innermost.
    const Tensor raw = make_view(channels_last, {2 * 4 * 5 * 3}, {1}, 0).to(kFloat64);
    const double* memory = raw.data_ptr<double>();
    EXPECT_EQ(memory[1], static_cast<double>(x.to(dtype).to(kFloat64).data_ptr<double>()[20]))
        << dtype << ": element (0, 1, 0, 0) is the second in channels-last memory";
    EXPECT_TRUE(all_close(channels_last.to(kFloat32), x.to(dtype).to(kFloat32), 0, 0)) << dtype;
    // And back to NCHW.
    Tensor back = empty(x.sizes(), TensorOptions(kFloat32));
    back.copy_(channels_last);
    EXPECT_TRUE(all_close(back, x.to(dtype).to(kFloat32), 0, 0)) << dtype;
  }
}

TEST(CpuCopy, BroadcastTransposedAndFilledDestinations) {
  const Tensor per_channel = tensor({1.5, -2.0, 3.25}).reshape({1, 3, 1, 1});
  Tensor expanded = empty({2, 3, 4, 5}, TensorOptions(kBFloat16), MemoryFormat::ChannelsLast);
  expanded.copy_(per_channel);
  EXPECT_TRUE(all_close(expanded.to(kFloat32), per_channel.expand({2, 3, 4, 5}), 0, 0));

  const Tensor a = wiggly({3, 4}, 0.2);
  Tensor transposed_target = empty({4, 3}).t();  // [3, 4] with strides (1, 3)
  transposed_target.copy_(a);
  EXPECT_TRUE(all_close(transposed_target, a, 0, 0));

  Tensor channels_last = empty({2, 3, 4, 5}, TensorOptions(kFloat16), MemoryFormat::ChannelsLast);
  channels_last.fill_(0.75);
  EXPECT_TRUE(all_close(channels_last.to(kFloat32), full({2, 3, 4, 5}, 0.75), 0, 0));
}

}  // namespace
}  // namespace minidl
