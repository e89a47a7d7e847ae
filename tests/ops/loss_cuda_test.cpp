// softmax, log_softmax and the losses on CUDA against the CPU (float32 unless a test says
// otherwise), forward and backward. The shapes reach every row layout of ops/cuda/loss.cu:
// a warp per row, a block per row (C > 1024), and one thread per row (softmax over a dim that
// is not the last).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "minidl/minidl.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

// Distinct, sign-mixed float32 values in [-amplitude, amplitude], on the CPU.
Tensor wiggly(const Shape& sizes, double amplitude = 3.0, double phase = 0.0) {
  return testing::wiggly(sizes, kFloat32, {.phase = phase, .amplitude = amplitude});
}

// Class indices in [0, classes), on the CPU.
Tensor targets(int64_t rows, int64_t classes) {
  std::vector<int64_t> values(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) values[i] = (i * 7 + 3) % classes;
  return tensor(values);
}

// d sum(fn(x) * w) / dx on `device`, returned on the CPU, for a fixed weight w.
Tensor gradient_on(Device device, const Tensor& x_cpu,
                   const std::function<Tensor(const Tensor&)>& fn) {
  Tensor x = x_cpu.to(device).detach();
  x.requires_grad_();
  Tensor y = fn(x);
  y.backward(wiggly(y.sizes(), 1.0, 2.0).to(device));
  return x.grad().cpu();
}

void expect_same_forward_and_backward(const Tensor& x,
                                      const std::function<Tensor(const Tensor&)>& fn,
                                      const std::string& what) {
  EXPECT_TRUE(all_close(fn(x.cuda()).cpu(), fn(x), 1e-5, 1e-4)) << what << " forward";
  EXPECT_TRUE(
      all_close(gradient_on(Device(kCUDA), x, fn), gradient_on(Device(kCPU), x, fn), 1e-5, 1e-4))
      << what << " backward";
}

struct SoftmaxCase {
  Shape sizes;
  int64_t dim;
  const char* path;
};

TEST(SoftmaxCuda, ForwardAndBackwardMatchCpuOnEveryRowLayout) {
  SKIP_WITHOUT_CUDA();
  const std::vector<SoftmaxCase> cases{
      {{37, 10}, 1, "warp per row"},
      {{5, 3000}, -1, "block per row"},
      {{4, 6, 5}, 1, "thread per row (middle dim)"},
      {{9, 7}, 0, "thread per row (first dim)"},
  };
  for (const SoftmaxCase& c : cases) {
    Tensor x = wiggly(c.sizes, 20.0);
    const int64_t dim = c.dim;
    expect_same_forward_and_backward(
        x, [dim](const Tensor& t) { return softmax(t, dim); }, std::string("softmax, ") + c.path);
    expect_same_forward_and_backward(
        x, [dim](const Tensor& t) { return log_softmax(t, dim); },
        std::string("log_softmax, ") + c.path);
  }
}

TEST(SoftmaxCuda, HalfInputsKeepTheirDtypeAndComputeInFloat) {
  SKIP_WITHOUT_CUDA();
  Tensor x = wiggly({16, 50}, 8.0);
  Tensor half_out = softmax(x.to(kFloat16).cuda(), 1);
  EXPECT_EQ(half_out.dtype(), kFloat16);
  EXPECT_TRUE(all_close(half_out.cpu(), softmax(x, 1), 1e-3, 1e-2));
  Tensor bf16_out = log_softmax(x.to(kBFloat16).cuda(), 1);
  EXPECT_EQ(bf16_out.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(bf16_out.cpu(), log_softmax(x.to(kBFloat16).to(kFloat32), 1), 2e-2, 1e-2));
}

TEST(CrossEntropyCuda, ForwardAndBackwardMatchCpu) {
  SKIP_WITHOUT_CUDA();
  for (const Shape& sizes : {Shape{64, 10}, Shape{8, 3000}}) {
    Tensor logits = wiggly(sizes, 10.0);
    Tensor target_cpu = targets(sizes[0], sizes[1]);
    Tensor target_gpu = target_cpu.cuda();
    for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
      for (double s : {0.0, 0.1}) {
        auto fn = [&](const Tensor& t) {
          return cross_entropy(t, t.is_cuda() ? target_gpu : target_cpu, reduction, s);
        };
        expect_same_forward_and_backward(logits, fn,
                                         "cross_entropy " + shape_str(sizes) + ", reduction " +
                                             std::to_string(static_cast<int>(reduction)) +
                                             ", smoothing " + std::to_string(s));
      }
    }
  }
}

// Masked classes (-inf logits): a finite loss and no gradient for them, without label smoothing
// (with it, the smoothing's share of -inf is inf on both sides). The warp-per-row and
// block-per-row kernels both.
TEST(CrossEntropyCuda, MaskedClassesWithMinusInfinityLogitsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  for (const Shape& sizes : {Shape{16, 10}, Shape{4, 3000}}) {
    const Tensor logits = masked_fill(wiggly(sizes, 5.0), arange(sizes[1]).remainder(3) == 1,
                                      -std::numeric_limits<double>::infinity());
    const Tensor target_cpu = arange(sizes[0]).remainder(3) * 3;  // never a masked class
    const Tensor target_gpu = target_cpu.cuda();
    expect_same_forward_and_backward(
        logits,
        [&](const Tensor& t) { return cross_entropy(t, t.is_cuda() ? target_gpu : target_cpu); },
        "masked cross_entropy " + shape_str(sizes));
    EXPECT_TRUE(std::isfinite(cross_entropy(logits.cuda(), target_gpu).item<double>()));
  }
}

TEST(CrossEntropyCuda, IgnoredRowsMatchCpuAndTheMeanCountsOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  Tensor logits = wiggly({16, 9}, 5.0);
  std::vector<int64_t> values = to_vector<int64_t>(targets(16, 9));
  for (size_t i = 0; i < values.size(); i += 3) values[i] = -100;
  Tensor target_cpu = tensor(values);
  Tensor target_gpu = target_cpu.cuda();
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    for (double s : {0.0, 0.1}) {
      auto fn = [&](const Tensor& t) {
        return cross_entropy(t, t.is_cuda() ? target_gpu : target_cpu, reduction, s);
      };
      expect_same_forward_and_backward(logits, fn,
                                       "cross_entropy with ignored rows, reduction " +
                                           std::to_string(static_cast<int>(reduction)) +
                                           ", smoothing " + std::to_string(s));
    }
    auto nll = [&](const Tensor& t) {
      return nll_loss(t, t.is_cuda() ? target_gpu : target_cpu, reduction);
    };
    expect_same_forward_and_backward(logits, nll, "nll_loss with ignored rows");
  }
  // Every row ignored: NaN mean, zero gradient, as on the CPU.
  Tensor all_ignored = wiggly({2, 3}).cuda().requires_grad_();
  Tensor loss = cross_entropy(all_ignored, tensor(std::vector<int64_t>{-100, -100}).cuda());
  EXPECT_TRUE(std::isnan(loss.item<float>()));
  loss.backward();
  EXPECT_TRUE(all_close(all_ignored.grad().cpu(), zeros({2, 3})));
}

TEST(CrossEntropyCuda, HalfLogits) {
  SKIP_WITHOUT_CUDA();
  Tensor logits = wiggly({32, 10}, 4.0).to(kFloat16);
  Tensor target = targets(32, 10);
  Tensor loss = cross_entropy(logits.cuda(), target.cuda());
  EXPECT_EQ(loss.dtype(), kFloat16);
  EXPECT_TRUE(all_close(loss.cpu(), cross_entropy(logits, target), 1e-3, 1e-3));
}

TEST(CrossEntropyCuda, OutOfRangeTargetGivesNaNWithoutSynchronising) {
  SKIP_WITHOUT_CUDA();
  // Documented in ops/loss.cpp: the device does not report the bad target to the host, the
  // row's loss (and so the mean) becomes NaN instead.
  Tensor logits = wiggly({3, 4}).cuda();
  Tensor target = tensor(std::vector<int64_t>{0, 4, 1}).cuda();
  std::vector<float> per_row = to_vector<float>(cross_entropy(logits, target, Reduction::None));
  EXPECT_FALSE(std::isnan(per_row[0]));
  EXPECT_TRUE(std::isnan(per_row[1]));
  EXPECT_FALSE(std::isnan(per_row[2]));
  EXPECT_TRUE(std::isnan(cross_entropy(logits, target).item<float>()));
  EXPECT_TRUE(std::isnan(nll_loss(logits, target).item<float>()));
}

TEST(NllLossCuda, ForwardAndBackwardMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor log_probs = wiggly({20, 7});
  Tensor target_cpu = targets(20, 7);
  Tensor target_gpu = target_cpu.cuda();
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto fn = [&](const Tensor& t) {
      return nll_loss(t, t.is_cuda() ? target_gpu : target_cpu, reduction);
    };
    expect_same_forward_and_backward(
        log_probs, fn, "nll_loss reduction " + std::to_string(static_cast<int>(reduction)));
  }
}

TEST(MseLossCuda, ForwardAndBackwardMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor input = wiggly({5, 6});
  Tensor target_cpu = wiggly({5, 6}, 2.0, 1.0);
  Tensor target_gpu = target_cpu.cuda();
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto fn = [&](const Tensor& t) {
      return mse_loss(t, t.is_cuda() ? target_gpu : target_cpu, reduction);
    };
    expect_same_forward_and_backward(
        input, fn, "mse_loss reduction " + std::to_string(static_cast<int>(reduction)));
  }
}

}  // namespace
}  // namespace minidl
