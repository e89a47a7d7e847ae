// nn::MultiheadAttention moved to a GPU gives the CPU's outputs, weights and gradients, in
// float32 and under bfloat16 autocast.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::wiggly;

TEST(MultiheadAttentionCuda, MatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  manual_seed(8);
  nn::MultiheadAttention cpu(nn::MultiheadAttentionOptions(16, 4).batch_first(true));
  manual_seed(8);
  nn::MultiheadAttention gpu(nn::MultiheadAttentionOptions(16, 4).batch_first(true));
  gpu->to(Device(kCUDA));
  const Tensor q = wiggly({3, 9, 16}, 0.0), k = wiggly({3, 11, 16}, 1.0);
  std::vector<uint8_t> padding(33, 0);
  padding[11 + 10] = padding[22 + 9] = padding[22 + 10] = 1;
  const Tensor key_padding_mask = from_host(padding.data(), {3, 11}, kUInt8).to(kBool);
  for (bool need_weights : {false, true}) {
    auto [cpu_out, cpu_weights] = cpu->forward(q, k, k, key_padding_mask, need_weights);
    auto [gpu_out, gpu_weights] =
        gpu->forward(q.cuda(), k.cuda(), k.cuda(), key_padding_mask.cuda(), need_weights);
    EXPECT_TRUE(all_close(gpu_out.cpu(), cpu_out, 2e-5, 1e-4)) << need_weights;
    if (need_weights) EXPECT_TRUE(all_close(gpu_weights.cpu(), cpu_weights, 2e-5, 1e-4));
    sum(mul(cpu_out, cpu_out)).backward();
    sum(mul(gpu_out, gpu_out)).backward();
    EXPECT_TRUE(
        all_close(gpu->in_proj_weight.grad().cpu(), cpu->in_proj_weight.grad(), 1e-4, 1e-3));
    cpu->zero_grad();
    gpu->zero_grad();
  }
  {
    amp::AutocastGuard autocast(kBFloat16);
    auto [cpu_out, unused_cpu] = cpu->forward(q, k, k);
    auto [gpu_out, unused_gpu] = gpu->forward(q.cuda(), k.cuda(), k.cuda());
    EXPECT_EQ(gpu_out.dtype(), kBFloat16);
    EXPECT_TRUE(all_close(gpu_out.cpu(), cpu_out, 3e-2, 3e-2));
  }
}

}  // namespace
}  // namespace minidl
