// gather, scatter, scatter_add, index_add, masked_select and masked_fill_ on CUDA against the
// CPU: equal to the bit in every dtype, with many repeated indices (Note [Deterministic
// scatter_add] in ops/indexing.cpp: the same bytes on every run, and the CPU's), the gradients,
// and out-of-range indices raised at the next sync point (Note [Deferred device errors]).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/masking.h"
#include "minidl/ops/shape.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::wiggly;

// `count` indices in [0, size), most of them 0, 1 or 2 (many repeats), as an int64 tensor.
Tensor skewed_index(const Shape& sizes, int64_t size) {
  std::vector<int64_t> values(static_cast<size_t>(shape_numel(sizes)));
  uint64_t state = 12345;
  for (auto& value : values) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t draw = state >> 33;
    value = draw % 4 == 0 ? static_cast<int64_t>(draw % static_cast<uint64_t>(size))
                          : static_cast<int64_t>(draw % 3);
  }
  return tensor(values, sizes);
}

TEST(IndexingCuda, GatherAndScatterEqualTheCpusToTheBit) {
  SKIP_WITHOUT_CUDA();
  const Tensor index = skewed_index({6, 40, 5}, 50);  // smaller than x and src in dims 0 and 2
  for (DType dtype : {kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kUInt8}) {
    SCOPED_TRACE(dtype_name(dtype));
    // Values in [0, 20], which every dtype holds.
    const Tensor x = wiggly({7, 50, 8}, dtype, {.amplitude = 10.0, .offset = 10.0});
    const Tensor src = wiggly({6, 41, 5}, dtype, {.phase = 1.0, .amplitude = 10.0, .offset = 10.0});
    EXPECT_TRUE(bitwise_equal(gather(x.cuda(), 1, index.cuda()).cpu(), gather(x, 1, index)));
    EXPECT_TRUE(bitwise_equal(scatter(x.cuda(), 1, index.cuda(), src.cuda()).cpu(),
                              scatter(x, 1, index, src)));
    EXPECT_TRUE(bitwise_equal(scatter_add(x.cuda(), 1, index.cuda(), src.cuda()).cpu(),
                              scatter_add(x, 1, index, src)));
  }
  const Tensor flags = wiggly({4, 6}) > 0.0;
  EXPECT_TRUE(bitwise_equal(gather(flags.cuda(), 0, zeros({2, 6}, kInt64).cuda()).cpu(),
                            gather(flags, 0, zeros({2, 6}, kInt64))));
}

TEST(IndexingCuda, ScatterAddAndIndexAddRepeatBitForBit) {
  SKIP_WITHOUT_CUDA();
  const Tensor index = skewed_index({20000}, 100).cuda();
  const Tensor src = wiggly({20000}, 2.0).cuda();
  const Tensor x = wiggly({100}).cuda();
  const Tensor first = scatter_add(x, 0, index, src);
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(bitwise_equal(scatter_add(x, 0, index, src).cpu(), first.cpu()));
  EXPECT_TRUE(bitwise_equal(first.cpu(), scatter_add(x.cpu(), 0, index.cpu(), src.cpu())));
  const Tensor rows = skewed_index({3000}, 64);
  const Tensor table = wiggly({64, 33}, 0.0, kBFloat16);
  const Tensor source = wiggly({3000, 33}, 1.0, kBFloat16);
  const Tensor on_gpu = index_add(table.cuda(), 0, rows.cuda(), source.cuda(), 0.5);
  EXPECT_TRUE(bitwise_equal(on_gpu.cpu(), index_add(table, 0, rows, source, 0.5)));
  EXPECT_TRUE(bitwise_equal(index_add(table.cuda(), 0, rows.cuda(), source.cuda(), 0.5).cpu(),
                            on_gpu.cpu()));
}

TEST(IndexingCuda, GradientsMatchTheCpus) {
  SKIP_WITHOUT_CUDA();
  const Tensor index = skewed_index({3, 10, 4}, 12);
  const Tensor x = wiggly({3, 12, 4});
  const Tensor src = wiggly({3, 10, 4}, 1.0);
  const Tensor upstream = wiggly({3, 12, 4}, 2.0);
  for (bool add : {true, false}) {
    Tensor x_cpu = x.detach().requires_grad_(), src_cpu = src.detach().requires_grad_();
    Tensor x_gpu = x.cuda().requires_grad_(), src_gpu = src.cuda().requires_grad_();
    (add ? scatter_add(x_cpu, 1, index, src_cpu) : scatter(x_cpu, 1, index, src_cpu))
        .backward(upstream);
    (add ? scatter_add(x_gpu, 1, index.cuda(), src_gpu) : scatter(x_gpu, 1, index.cuda(), src_gpu))
        .backward(upstream.cuda());
    EXPECT_TRUE(bitwise_equal(x_gpu.grad().cpu(), x_cpu.grad()));
    EXPECT_TRUE(bitwise_equal(src_gpu.grad().cpu(), src_cpu.grad()));
  }
  Tensor x_cpu = x.detach().requires_grad_(), x_gpu = x.cuda().requires_grad_();
  gather(x_cpu, 1, index).backward(src);
  gather(x_gpu, 1, index.cuda()).backward(src.cuda());
  EXPECT_TRUE(bitwise_equal(x_gpu.grad().cpu(), x_cpu.grad()));
  const Tensor mask = wiggly({1, 12, 4}, 3.0) > 0.0;
  Tensor m_cpu = x.detach().requires_grad_(), m_gpu = x.cuda().requires_grad_();
  Tensor selected_cpu = masked_select(m_cpu, mask);
  Tensor selected_gpu = masked_select(m_gpu, mask.cuda());
  EXPECT_TRUE(bitwise_equal(selected_gpu.cpu(), selected_cpu));
  selected_cpu.backward(wiggly(selected_cpu.sizes(), 4.0));
  selected_gpu.backward(wiggly(selected_cpu.sizes(), 4.0).cuda());
  EXPECT_TRUE(all_close(m_gpu.grad().cpu(), m_cpu.grad(), 0.0, 0.0));
}

TEST(IndexingCuda, MaskedFillInPlace) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({3, 5}).cuda();
  const Tensor mask = wiggly({5}, 1.0) > 0.0;
  x.masked_fill_(mask.cuda(), -2.0);
  EXPECT_TRUE(bitwise_equal(x.cpu(), masked_fill(wiggly({3, 5}), mask, -2.0)));
}

TEST(IndexingCuda, OutOfRangeIndicesAreRaisedAtTheNextSyncPoint) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = ones({3, 4}).cuda();
  Tensor out = gather(x, 0, tensor(std::vector<int64_t>{0, 1, 7, 2}, {1, 4}).cuda());
  EXPECT_ERROR_CONTAINS(out.cpu(),
                        "gather: index 7 at position 2 of the index is out of range "
                        "for a dimension of size 3");
  // Raised once; the bad element was written as zero.
  EXPECT_EQ(to_vector<float>(out.cpu()), (std::vector<float>{1, 1, 0, 1}));
  (void)scatter_add(x, 1, tensor(std::vector<int64_t>{-1}, {1, 1}).cuda(), ones({1, 1}).cuda());
  EXPECT_ERROR_CONTAINS(cuda::synchronize(), "scatter_add: index -1 at position 0");
  (void)index_add(x, 0, tensor(std::vector<int64_t>{3}).cuda(), ones({1, 4}).cuda());
  EXPECT_ERROR_CONTAINS(cuda::synchronize(),
                        "index_add: index 3 is out of range for a dimension of size 3");
  EXPECT_NO_THROW(cuda::synchronize());
  // index_select and one_hot report theirs the same way, and the context stays usable; an
  // index out of range for its own dim among two tensor indices, whose row number would be in
  // range, is made out of range for index_select to report.
  Tensor rows = index_select(x, 1, tensor(std::vector<int64_t>{0, 4}).cuda());
  EXPECT_ERROR_CONTAINS(rows.cpu(),
                        "index_select: index 4 is out of range for a dimension of size 4 (at "
                        "position 1 of the index)");
  EXPECT_ERROR_CONTAINS(one_hot(tensor(std::vector<int64_t>{1, -1}).cuda(), 3).cpu(),
                        "one_hot: label -1 is out of range for 3 classes (at position 1)");
  (void)x.index({tensor(std::vector<int64_t>{0}).cuda(), tensor(std::vector<int64_t>{4}).cuda()});
  EXPECT_ERROR_CONTAINS(cuda::synchronize(),
                        "index_select: index 12 is out of range for a dimension of size 12");
  EXPECT_EQ(to_vector<float>((x * 2.0).cpu()), std::vector<float>(12, 2.0f));
}

TEST(IndexingCuda, TensorIndicesAmongOthersMatchTheCpus) {
  SKIP_WITHOUT_CUDA();
  using indexing::Slice;
  // [2, 1]: broadcast with a row of `columns` ([2]) to [2, 2].
  const Tensor rows = tensor(std::vector<int64_t>{2, -1}, {2, 1});
  const Tensor columns = tensor(std::vector<int64_t>{3, 0, -2, 1}, {2, 2});
  const Tensor mask = wiggly({4, 5}, 2.0) > 0.0;
  Tensor x_cpu = wiggly({3, 4, 5}, 0.5, kFloat32).requires_grad_();
  Tensor x_gpu = x_cpu.detach().cuda().requires_grad_();
  const auto read = [](const Tensor& x, const Tensor& r, const Tensor& c, const Tensor& m) {
    return x.index({Slice(), c}).sum() + (x.index({r, Slice(), c[0]}) * 2.0).sum() +
           x.index({1, m}).pow(2).sum();
  };
  read(x_cpu, rows, columns, mask).backward();
  read(x_gpu, rows.cuda(), columns.cuda(), mask.cuda()).backward();
  EXPECT_TRUE(all_close(x_gpu.grad().cpu(), x_cpu.grad(), 0.0, 0.0));
  EXPECT_TRUE(bitwise_equal(x_gpu.detach().index({rows.cuda(), Slice(), columns[1].cuda()}).cpu(),
                            x_cpu.detach().index({rows, Slice(), columns[1]})));
  // index_put_ among slices, accumulating repeated positions in order on both.
  Tensor y_cpu = zeros({3, 4});
  Tensor y_gpu = zeros({3, 4}).cuda();
  const Tensor picks = tensor(std::vector<int64_t>{1, 1, 3}, {3});
  y_cpu.index_put_({Slice(), picks}, wiggly({3, 3}), /*accumulate=*/true);
  y_gpu.index_put_({Slice(), picks.cuda()}, wiggly({3, 3}).cuda(), /*accumulate=*/true);
  EXPECT_TRUE(bitwise_equal(y_gpu.cpu(), y_cpu));
}

}  // namespace
}  // namespace minidl
