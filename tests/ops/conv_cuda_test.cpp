// conv2d on CUDA (cuDNN) against the CPU (float32 unless a test says otherwise): every case of
// the table forward and backward, in the case's own layout and channels-last, deterministic
// mode, benchmark mode, TF32, 16-bit types, layouts of the results, a non-default stream, and no
// device allocations once the workspaces are cached.
#include <gtest/gtest.h>

#include "conv_test_cases.h"
#include "minidl/core/autograd/node.h"
#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/ops/conv.h"
#include "minidl/ops/linalg.h"
#include "test_util.h"

namespace minidl {
namespace {

using namespace conv_testing;
using testing::all_close;
using testing::same_layout_on_cuda;

// float32 results: cuDNN's exact-fp32 algorithms sum in another order than OpenBLAS.
constexpr double kAtol = 1e-4, kRtol = 1e-4;

// The layouts each case runs in on the device.
enum class DeviceLayout { AsInTable, ChannelsLast };

Tensor input_on_cuda(const Tensor& cpu_input, DeviceLayout layout) {
  if (layout == DeviceLayout::AsInTable) return same_layout_on_cuda(cpu_input);
  return cpu_input.cuda().contiguous(MemoryFormat::ChannelsLast);
}

const char* layout_name(DeviceLayout layout) {
  return layout == DeviceLayout::AsInTable ? "layout of the table" : "channels-last";
}

struct ConvResults {
  Tensor output, grad_input, grad_weight, grad_bias;  // on the CPU
};

// Forward, then backward of sum(output * grad_output), of leaves made from the given tensors.
ConvResults run(const ConvCase& c, const Tensor& input, const Tensor& weight, const Tensor& bias,
                const Tensor& grad_output) {
  Tensor x = input.detach().requires_grad_(), w = weight.detach().requires_grad_();
  Tensor b = bias.defined() ? bias.detach().requires_grad_() : Tensor();
  const Conv2dParams& p = c.params;
  Tensor out = conv2d(x, w, b, p.stride, p.padding, p.dilation, p.groups);
  out.backward(grad_output.to(out.device(), out.dtype()));
  return {out.cpu(), x.grad().cpu(), w.grad().cpu(), b.defined() ? b.grad().cpu() : Tensor()};
}

// The case on the CPU in float32: the reference of the parity tests.
struct CpuReference {
  Tensor input, weight, bias, grad_output;
  ConvResults results;
};

CpuReference cpu_reference(const ConvCase& c) {
  CpuReference ref;
  ref.input = make_input(c).to(kFloat32);
  ref.weight = make_weight(c).to(kFloat32);
  ref.bias = c.with_bias ? make_bias(c).to(kFloat32) : Tensor();
  const Shape out_sizes = conv2d_output_sizes(c.input, c.weight, c.params);
  ref.grad_output = wiggly(out_sizes, 3.0).to(kFloat32);
  // make_input keeps the layout of the table (a permuted or sliced view) on the CPU too.
  ref.results = run(c, ref.input, ref.weight, ref.bias, ref.grad_output);
  return ref;
}

::testing::AssertionResult results_close(const ConvResults& actual, const ConvResults& expected,
                                         double atol, double rtol) {
  if (auto r = all_close(actual.output, expected.output, atol, rtol); !r) return r << " (output)";
  if (auto r = all_close(actual.grad_input, expected.grad_input, atol, rtol); !r)
    return r << " (input gradient)";
  if (auto r = all_close(actual.grad_weight, expected.grad_weight, atol, rtol); !r)
    return r << " (weight gradient)";
  if (expected.grad_bias.defined()) {
    if (auto r = all_close(actual.grad_bias, expected.grad_bias, atol, rtol); !r)
      return r << " (bias gradient)";
  }
  return ::testing::AssertionSuccess();
}

void expect_every_case_matches_cpu(double atol, double rtol) {
  for (const ConvCase& c : conv_cases()) {
    const CpuReference ref = cpu_reference(c);
    for (DeviceLayout layout : {DeviceLayout::AsInTable, DeviceLayout::ChannelsLast}) {
      const Tensor bias = ref.bias.defined() ? ref.bias.cuda() : Tensor();
      const ConvResults gpu =
          run(c, input_on_cuda(ref.input, layout), ref.weight.cuda(), bias, ref.grad_output);
      EXPECT_TRUE(results_close(gpu, ref.results, atol, rtol))
          << c.name << ", " << layout_name(layout);
    }
  }
}

TEST(Conv2dCuda, EveryCaseMatchesCpuForwardAndBackward) {
  SKIP_WITHOUT_CUDA();
  ASSERT_FALSE(allow_tf32());
  ASSERT_FALSE(cudnn_deterministic());
  expect_every_case_matches_cpu(kAtol, kRtol);
}

TEST(Conv2dCuda, EveryCaseMatchesCpuInDeterministicMode) {
  SKIP_WITHOUT_CUDA();
  set_cudnn_deterministic(true);
  expect_every_case_matches_cpu(kAtol, kRtol);
  // Deterministic algorithms give the same bits run after run.
  for (const ConvCase& c : conv_cases()) {
    const CpuReference ref = cpu_reference(c);
    const Tensor bias = ref.bias.defined() ? ref.bias.cuda() : Tensor();
    const Tensor input = input_on_cuda(ref.input, DeviceLayout::ChannelsLast);
    const ConvResults first = run(c, input, ref.weight.cuda(), bias, ref.grad_output);
    const ConvResults second = run(c, input, ref.weight.cuda(), bias, ref.grad_output);
    EXPECT_TRUE(results_close(second, first, 0, 0)) << c.name;
  }
  set_cudnn_deterministic(false);
}

// Chooses cuDNN's benchmark mode for the scope.
class ScopedCudnnBenchmark {
 public:
  ScopedCudnnBenchmark() : previous_(cudnn_benchmark()) { set_cudnn_benchmark(true); }
  ~ScopedCudnnBenchmark() { set_cudnn_benchmark(previous_); }
  ScopedCudnnBenchmark(const ScopedCudnnBenchmark&) = delete;
  ScopedCudnnBenchmark& operator=(const ScopedCudnnBenchmark&) = delete;

 private:
  bool previous_;
};

// The algorithms cuDNN's timed trials choose compute the same convolutions, in float32 and in
// the 16-bit types; and once chosen, a step allocates nothing more (the trials run once per
// shape, not per call).
TEST(Conv2dCuda, EveryCaseMatchesCpuInBenchmarkMode) {
  SKIP_WITHOUT_CUDA();
  const ScopedCudnnBenchmark benchmark;
  expect_every_case_matches_cpu(kAtol, kRtol);
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor x =
        wiggly({8, 32, 16, 16}).to(dtype).cuda().contiguous(MemoryFormat::ChannelsLast);
    const Tensor w =
        wiggly({32, 32, 3, 3}, 1.0).to(dtype).cuda().contiguous(MemoryFormat::ChannelsLast);
    const Tensor timed = conv2d(x, w, {}, 1, 1).to(kFloat32).cpu();
    set_cudnn_benchmark(false);
    const Tensor ranked = conv2d(x, w, {}, 1, 1).to(kFloat32).cpu();
    set_cudnn_benchmark(true);
    // One rounding to 16 bits apart: the sums differ in order only.
    EXPECT_TRUE(all_close(timed, ranked, 1e-2, dtype == kFloat16 ? 2e-3 : 1.6e-2))
        << dtype_name(dtype);
  }
}

TEST(Conv2dCuda, BenchmarkModeChoosesOnceThenAllocatesNothing) {
  SKIP_WITHOUT_CUDA();
  const ScopedCudnnBenchmark benchmark;
  Tensor x = wiggly({8, 24, 12, 12}).to(kFloat32).cuda().requires_grad_();
  Tensor w = wiggly({24, 24, 3, 3}, 1.0).to(kFloat32).cuda().requires_grad_();
  Tensor grad = ones({8, 24, 12, 12}).cuda();
  auto step = [&] {
    x.set_grad(Tensor());
    w.set_grad(Tensor());
    conv2d(x, w, {}, 1, 1).backward(grad);
  };
  step();  // times the candidates and caches the choices
  const int device = cuda::current_device();
  const uint64_t allocations = cuda::memory_stats(device).num_device_allocations;
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(cuda::memory_stats(device).num_device_allocations, allocations);
}

TEST(Conv2dCuda, Tf32StaysCloseToFloat32) {
  SKIP_WITHOUT_CUDA();
  set_allow_tf32(true);
  // TF32 keeps 10 bits of mantissa: products are exact to about 1e-3 relative.
  expect_every_case_matches_cpu(2e-2, 1e-2);
  set_allow_tf32(false);
}

TEST(Conv2dCuda, HalfAndBFloat16AccumulateInFloat) {
  SKIP_WITHOUT_CUDA();
  for (const ConvCase& c : conv_cases()) {
    for (DType dtype : {kFloat16, kBFloat16}) {
      // The float32 CPU result for the rounded inputs; only the 16-bit output rounding and the
      // gradients' rounding separate the two.
      const Tensor input = make_input(c).to(dtype), weight = make_weight(c).to(dtype);
      const Tensor bias = c.with_bias ? make_bias(c).to(dtype) : Tensor();
      const Tensor grad_output =
          wiggly(conv2d_output_sizes(c.input, c.weight, c.params), 3.0).to(dtype);
      const ConvResults expected =
          run(c, input.to(kFloat32), weight.to(kFloat32),
              bias.defined() ? bias.to(kFloat32) : Tensor(), grad_output.to(kFloat32));
      for (DeviceLayout layout : {DeviceLayout::AsInTable, DeviceLayout::ChannelsLast}) {
        const ConvResults gpu = run(c, input_on_cuda(input, layout), weight.cuda(),
                                    bias.defined() ? bias.cuda() : Tensor(), grad_output);
        const double tolerance = dtype == kFloat16 ? 1e-2 : 6e-2;
        EXPECT_TRUE(results_close(gpu, expected, tolerance, tolerance))
            << c.name << ", " << dtype << ", " << layout_name(layout);
      }
    }
  }
}

TEST(Conv2dCuda, ResultsTakeTheLayoutsOfTheirOperands) {
  SKIP_WITHOUT_CUDA();
  const ConvCase c = conv_cases()[1];  // padding 1, with bias
  const CpuReference ref = cpu_reference(c);
  Tensor x = input_on_cuda(ref.input, DeviceLayout::ChannelsLast).requires_grad_();
  Tensor w = ref.weight.cuda().requires_grad_();
  Tensor b = ref.bias.cuda().requires_grad_();
  Tensor out = conv2d(x, w, b, c.params.stride, c.params.padding);
  EXPECT_EQ(out.suggest_memory_format(), MemoryFormat::ChannelsLast);
  // The node's own gradients (a leaf's .grad is a contiguous copy of its own).
  const std::vector<Tensor> grads = out.grad_fn()->apply(ref.grad_output.cuda());
  EXPECT_EQ(grads[0].suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(grads[1].is_contiguous());  // the weight is NCHW, so is its gradient
  EXPECT_TRUE(all_close(grads[0].cpu(), ref.results.grad_input, kAtol, kRtol));
  EXPECT_TRUE(all_close(grads[1].cpu(), ref.results.grad_weight, kAtol, kRtol));
  EXPECT_TRUE(all_close(grads[2].cpu(), ref.results.grad_bias, kAtol, kRtol));

  // A channels-last weight under an NCHW input: NCHW output, channels-last weight gradient.
  Tensor w_channels_last =
      ref.weight.cuda().contiguous(MemoryFormat::ChannelsLast).requires_grad_();
  Tensor x_nchw = ref.input.cuda().requires_grad_();
  Tensor out_nchw = conv2d(x_nchw, w_channels_last, b, c.params.stride, c.params.padding);
  EXPECT_TRUE(out_nchw.is_contiguous());
  const std::vector<Tensor> nchw_grads = out_nchw.grad_fn()->apply(ref.grad_output.cuda());
  EXPECT_TRUE(nchw_grads[0].is_contiguous());
  EXPECT_EQ(nchw_grads[1].suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(nchw_grads[1].cpu(), ref.results.grad_weight, kAtol, kRtol));
}

TEST(Conv2dCuda, RunsOnTheCurrentStream) {
  SKIP_WITHOUT_CUDA();
  const ConvCase c = conv_cases()[5];  // groups 2
  const CpuReference ref = cpu_reference(c);
  cuda::Stream stream = cuda::Stream::create(cuda::current_device());
  ConvResults gpu;
  {
    cuda::StreamGuard guard(stream);
    gpu = run(c, input_on_cuda(ref.input, DeviceLayout::ChannelsLast), ref.weight.cuda(),
              ref.bias.cuda(), ref.grad_output);  // .cpu() at the end waits for the stream
  }
  EXPECT_TRUE(results_close(gpu, ref.results, kAtol, kRtol));
}

TEST(Conv2dCuda, NoDeviceAllocationsOnceWorkspacesAreCached) {
  SKIP_WITHOUT_CUDA();
  // A ResNet-like layer: the algorithms typically want a workspace.
  Tensor x = wiggly({8, 32, 16, 16}).to(kFloat32).cuda().requires_grad_();
  Tensor w = wiggly({32, 32, 3, 3}, 1.0).to(kFloat32).cuda().requires_grad_();
  Tensor grad = ones({8, 32, 16, 16}).cuda();
  auto step = [&] {
    x.set_grad(Tensor());
    w.set_grad(Tensor());
    conv2d(x, w, {}, 1, 1).backward(grad);
  };
  step();  // chooses the algorithms and fills the cache
  const int device = cuda::current_device();
  const uint64_t allocations = cuda::memory_stats(device).num_device_allocations;
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(cuda::memory_stats(device).num_device_allocations, allocations);
}

TEST(Conv2dCuda, DeviceMismatchIsAnErrorNamingTheDevices) {
  SKIP_WITHOUT_CUDA();
  EXPECT_ERROR_CONTAINS(conv2d(zeros({2, 4, 6, 6}), zeros({6, 4, 3, 3}).cuda()),
                        "conv2d: expected input, weight and bias on one device, got input on cpu "
                        "and weight on cuda:0");
  EXPECT_ERROR_CONTAINS(conv2d(zeros({2, 4, 6, 6}).cuda(), zeros({6, 4, 3, 3}).cuda(), zeros({6})),
                        "conv2d: expected input, weight and bias on one device, got input on "
                        "cuda:0 and bias on cpu");
}

}  // namespace
}  // namespace minidl
