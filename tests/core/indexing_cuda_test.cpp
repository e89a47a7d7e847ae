// Tensor::index and operator[] on CUDA against the CPU: the same views (values, layout, shared
// storage on the device) and the same gradients.
#include <gtest/gtest.h>

#include <vector>

#include "minidl/core/indexing.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using namespace indexing;
using testing::all_close;
using testing::wiggly;

std::vector<std::vector<TensorIndex>> index_cases() {
  return {
      {Slice(), 0},   {Slice(1, None), Slice(None, None, 2)},
      {"...", -1},    {None, 1, Ellipsis, Slice(-3, 100, 2)},
      {Slice(5, 10)},  // clamps to an empty view
      {2, 3, 4},
  };
}

TEST(IndexingCuda, ViewsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({3, 4, 5});
  Tensor gpu = x.cuda();
  for (const std::vector<TensorIndex>& indices : index_cases()) {
    Tensor on_gpu = gpu.index(indices), on_cpu = x.index(indices);
    EXPECT_TRUE(on_gpu.is_cuda());
    EXPECT_EQ(on_gpu.storage().get(), gpu.storage().get());
    EXPECT_EQ(on_gpu.strides(), on_cpu.strides());
    EXPECT_EQ(on_gpu.storage_offset(), on_cpu.storage_offset());
    EXPECT_TRUE(all_close(on_gpu.cpu(), on_cpu, 0, 0));
  }
  EXPECT_TRUE(all_close(gpu[2][-1].cpu(), x[2][-1], 0, 0));
}

TEST(IndexingCuda, WritingThroughAViewChangesTheDeviceTensor) {
  SKIP_WITHOUT_CUDA();
  Tensor x = zeros({2, 3});
  Tensor gpu = x.cuda();
  gpu.index({Slice(), 1}).fill_(7);
  x.index({Slice(), 1}).fill_(7);
  EXPECT_TRUE(all_close(gpu.cpu(), x, 0, 0));
  EXPECT_EQ(to_vector<float>(gpu), (std::vector<float>{0, 7, 0, 0, 7, 0}));
}

TEST(IndexingCuda, GradientsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({3, 4, 5});
  for (const std::vector<TensorIndex>& indices : index_cases()) {
    Tensor cpu_leaf = x.detach().requires_grad_();
    Tensor gpu_leaf = x.cuda().requires_grad_();
    Tensor cpu_out = cpu_leaf.index(indices).pow(2);
    Tensor weight = wiggly(cpu_out.sizes(), 1.0);
    cpu_out.backward(weight);
    gpu_leaf.index(indices).pow(2).backward(weight.cuda());
    EXPECT_TRUE(all_close(gpu_leaf.grad().cpu(), cpu_leaf.grad(), 1e-6, 1e-6));
  }
}

}  // namespace
}  // namespace minidl
