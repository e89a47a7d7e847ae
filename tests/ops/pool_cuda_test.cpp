// Pooling on CUDA against the CPU (float32), forward and backward, for every window case in
// NCHW and channels-last (NHWC), plus layout preservation and 16-bit inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/ops/pool.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct float32 values (a permutation of k / n - 0.5), so max-pool ties cannot differ.
Tensor distinct_values(const Shape& sizes) {
  const int64_t n = shape_numel(sizes);
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<float>((i * 7919) % n) / static_cast<float>(n) - 0.5f;
  return from_host(values.data(), sizes, kFloat32);
}

Tensor wiggly(const Shape& sizes) {
  return testing::wiggly(sizes, kFloat32, {.start = 0.5, .step = 0.61});
}

using PoolFn = std::function<Tensor(const Tensor&)>;

struct PoolCase {
  std::string name;
  Shape sizes;
  PoolFn pool;
};

std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> cases;
  struct Window {
    Shape sizes;
    Size2 kernel;
    std::optional<Size2> stride;
    Size2 padding;
  };
  const std::vector<Window> windows{
      {{1, 1, 4, 4}, 2, 2, 0},
      {{2, 3, 5, 5}, 3, 1, 1},
      {{1, 2, 7, 5}, 3, 2, 1},
      {{2, 1, 5, 6}, 2, 1, 0},
      {{1, 2, 5, 5}, 1, 2, 0},
      {{1, 3, 5, 4}, 2, std::nullopt, 1},
      {{1, 1, 6, 7}, {3, 2}, Size2{2, 1}, {1, 0}},
      {{8, 64, 32, 32}, 3, 2, 1},  // large enough for many blocks and the grid-stride loop
  };
  for (const Window& w : windows) {
    const std::string shape = shape_str(w.sizes);
    cases.push_back({"max_pool2d " + shape, w.sizes, [w](const Tensor& x) {
                       return max_pool2d(x, w.kernel, w.stride, w.padding);
                     }});
    for (bool count_include_pad : {true, false})
      cases.push_back({"avg_pool2d " + shape + (count_include_pad ? " incl. pad" : " excl. pad"),
                       w.sizes, [w, count_include_pad](const Tensor& x) {
                         return avg_pool2d(x, w.kernel, w.stride, w.padding, count_include_pad);
                       }});
  }
  const std::vector<std::pair<Shape, Size2>> adaptive{
      {{1, 2, 4, 4}, {2, 2}}, {{2, 1, 5, 7}, {3, 2}},  {{1, 2, 3, 5}, {4, 7}},
      {{4, 32, 7, 7}, 1},     {{2, 16, 9, 9}, {4, 5}},
  };
  for (const auto& [sizes, output_size] : adaptive)
    cases.push_back({"adaptive_avg_pool2d " + shape_str(sizes), sizes,
                     [output_size = output_size](const Tensor& x) {
                       return adaptive_avg_pool2d(x, output_size);
                     }});
  return cases;
}

// Forward values and the input gradient for a fixed upstream gradient.
struct Result {
  Tensor output;
  Tensor grad_input;
};

Result run(const PoolCase& c, const Tensor& input, const Tensor& upstream_cpu) {
  Tensor x = input.detach().requires_grad_();
  Tensor y = c.pool(x);
  y.backward(upstream_cpu.to(y.device()));
  return {y, x.grad()};
}

TEST(PoolCuda, ForwardAndBackwardMatchCpuInNchwAndNhwc) {
  SKIP_WITHOUT_CUDA();
  for (const PoolCase& c : pool_cases()) {
    const Tensor x = distinct_values(c.sizes);
    const Shape out_sizes = c.pool(x).sizes();
    const Tensor upstream = wiggly(out_sizes);
    const Result cpu = run(c, x, upstream);
    for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      const char* layout = format == MemoryFormat::ChannelsLast ? "NHWC" : "NCHW";
      const Result gpu = run(c, x.cuda().contiguous(format), upstream);
      EXPECT_TRUE(gpu.output.is_cuda());
      EXPECT_TRUE(all_close(gpu.output.cpu(), cpu.output, 1e-6, 1e-5)) << c.name << ", " << layout;
      EXPECT_TRUE(all_close(gpu.grad_input.cpu(), cpu.grad_input, 1e-6, 1e-5))
          << c.name << ", " << layout;
    }
  }
}

TEST(PoolCuda, ChannelsLastInputGivesChannelsLastOutputAndGradient) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = distinct_values({2, 8, 6, 6}).cuda().contiguous(MemoryFormat::ChannelsLast);
  for (const PoolCase& c : pool_cases()) {  // every window fits a 6x6 input
    Tensor leaf = x.detach().requires_grad_();
    Tensor y = c.pool(leaf);
    // is_contiguous rather than suggest_memory_format: a 1x1 output (adaptive_avg_pool2d to 1)
    // is contiguous in both layouts, and suggest_memory_format then says Contiguous.
    EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast)) << c.name;
    y.backward(ones_like(y));
    EXPECT_EQ(leaf.grad().suggest_memory_format(), MemoryFormat::ChannelsLast) << c.name;
  }
}

TEST(PoolCuda, SixteenBitInputsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = distinct_values({2, 4, 9, 9});
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor h = x.to(dtype);
    for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      const Tensor d = h.cuda().contiguous(format);
      EXPECT_TRUE(all_close(max_pool2d(d, 3, 2, 1).cpu(), max_pool2d(h, 3, 2, 1), 0, 0)) << dtype;
      EXPECT_TRUE(all_close(avg_pool2d(d, 3, 2, 1).cpu(), avg_pool2d(h, 3, 2, 1), 1e-2, 1e-2))
          << dtype;
      EXPECT_TRUE(all_close(adaptive_avg_pool2d(d, 4).cpu(), adaptive_avg_pool2d(h, 4), 1e-2, 1e-2))
          << dtype;
    }
  }
}

TEST(PoolCuda, ErrorsAreTheCpusAndEmptyBatchesWork) {
  SKIP_WITHOUT_CUDA();
  const Tensor x = zeros({1, 2, 4, 4}).cuda();
  EXPECT_ERROR_CONTAINS(max_pool2d(x, 5), "max_pool2d: kernel [5, 5] is larger than the padded");
  EXPECT_ERROR_CONTAINS(avg_pool2d(x, 3, 1, 2), "avg_pool2d: expected padding at most half");
  EXPECT_EQ(max_pool2d(zeros({0, 3, 4, 4}).cuda(), 2).sizes(), (Shape{0, 3, 2, 2}));
}

}  // namespace
}  // namespace minidl
