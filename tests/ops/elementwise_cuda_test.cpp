// Element-wise ops on CUDA against the CPU (the reference the CPU tests check against std::
// math): float32 within atol + |ref| * rtol, and 16-bit, integer and bool results. Covers
// broadcast, strided and channels-last-like operands, large tensors (many blocks, grid-stride
// loops), in-place methods, backward, and the device errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;

constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-5;  // device libm (expf, erff, tanhf) differs by a few ulp

const Device kGpu(kCUDA);

// Distinct, sign-mixed values in (-3, 3).
Tensor wiggly(const Shape& sizes, DType dtype = kFloat32, double offset = 0) {
  return testing::wiggly(sizes, dtype,
                         {.phase = offset, .amplitude = 2.7, .start = 1.3, .step = 0.9});
}

// Values in [0.5, 2.5), for log, sqrt, fractional powers and divisors.
Tensor positive(const Shape& sizes, DType dtype = kFloat32, double offset = 0) {
  return add(div(wiggly(sizes, kFloat64, offset), 2.7), 1.5).to(dtype);
}

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  bool positive_domain;
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, false},
      {"exp", [](const Tensor& x) { return exp(x); }, false},
      {"log", [](const Tensor& x) { return log(x); }, true},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, true},
      {"abs", [](const Tensor& x) { return abs(x); }, false},
      {"relu", [](const Tensor& x) { return relu(x); }, false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, false},
      {"tanh", [](const Tensor& x) { return tanh(x); }, false},
      {"gelu", [](const Tensor& x) { return gelu(x); }, false},
      {"pow(3)", [](const Tensor& x) { return pow(x, 3.0); }, false},
      {"pow(0.5)", [](const Tensor& x) { return pow(x, 0.5); }, true},
      {"add 1.5", [](const Tensor& x) { return add(x, 1.5); }, false},
      {"mul -2", [](const Tensor& x) { return mul(x, -2.0); }, false},
      {"div 3", [](const Tensor& x) { return div(x, 3.0); }, false},
  };
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

std::vector<std::pair<std::string, BinaryFn>> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b, 0.5); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
}

TEST(ElementwiseCuda, UnaryOpsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    Tensor x = c.positive_domain ? positive({7, 13}) : wiggly({7, 13});
    Tensor y = c.op(x.to(kGpu));
    EXPECT_TRUE(y.is_cuda());
    EXPECT_TRUE(all_close(y.cpu(), c.op(x), kAtol, kRtol));
    // Transposed (dense, permuted) and sliced (strided) inputs.
    EXPECT_TRUE(all_close(c.op(x.to(kGpu).t()).cpu(), c.op(x.t()), kAtol, kRtol));
    EXPECT_TRUE(all_close(c.op(x.to(kGpu).slice(1, 1, 13, 3)).cpu(), c.op(x.slice(1, 1, 13, 3)),
                          kAtol, kRtol));
  }
}

TEST(ElementwiseCuda, BinaryOpsMatchCpuWithBroadcastAndStrides) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({4, 1, 6}), b = positive({3, 1}, kFloat32, 0.4);
  Tensor s = positive({}, kFloat32, 0.8);
  // [4, 3, 6] views of [6, 3, 4] data: permuted on each device (to() makes tensors contiguous).
  Tensor permuted_source = wiggly({6, 3, 4}, kFloat32, 0.2);
  Tensor permuted = permuted_source.permute({2, 1, 0});
  Tensor permuted_gpu = permuted_source.to(kGpu).permute({2, 1, 0});
  for (const auto& [name, op] : binary_cases()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(all_close(op(a.to(kGpu), b.to(kGpu)).cpu(), op(a, b), kAtol, kRtol));
    EXPECT_TRUE(all_close(op(b.to(kGpu), a.to(kGpu)).cpu(), op(b, a), kAtol, kRtol));
    EXPECT_TRUE(all_close(op(a.to(kGpu), s.to(kGpu)).cpu(), op(a, s), kAtol, kRtol));
    EXPECT_TRUE(all_close(op(permuted_gpu, b.to(kGpu)).cpu(), op(permuted, b), kAtol, kRtol));
    EXPECT_TRUE(all_close(op(a.to(kGpu), permuted_gpu).cpu(), op(a, permuted), kAtol, kRtol));
  }
}

TEST(ElementwiseCuda, ResultsKeepADenseInputLayout) {
  SKIP_WITHOUT_CUDA();
  // NCHW data laid out channels-last: a permuted dense tensor.
  Tensor nhwc = wiggly({2, 5, 6, 3}).to(kGpu).permute({0, 3, 1, 2});
  Tensor y = relu(nhwc);
  EXPECT_EQ(y.strides(), nhwc.strides());
  EXPECT_TRUE(all_close(y.cpu(), relu(nhwc.cpu()), 0, 0));
  Tensor bias = wiggly({3, 1, 1}).to(kGpu);
  Tensor z = add(nhwc, bias);
  EXPECT_EQ(z.strides(), nhwc.strides());
  EXPECT_TRUE(all_close(z.cpu(), add(nhwc.cpu(), bias.cpu()), 0, 0));
}

TEST(ElementwiseCuda, LargeTensorsUseManyBlocks) {
  SKIP_WITHOUT_CUDA();
  // More elements than one wave of blocks covers, so the grid-stride loops go round.
  Tensor a = wiggly({1 << 12, 1 << 11});
  Tensor b = wiggly({1 << 11}, kFloat32, 0.5);
  Tensor a_gpu = a.to(kGpu), b_gpu = b.to(kGpu);
  EXPECT_TRUE(all_close(mul(a_gpu, b_gpu).cpu(), mul(a, b), 0, 0));
  EXPECT_TRUE(all_close(gelu(a_gpu).cpu(), gelu(a), kAtol, kRtol));
  EXPECT_TRUE(all_close(exp(a_gpu.t()).cpu(), exp(a.t()), kAtol, kRtol));
}

// Dense operands go 16 bytes to an access (ops/cuda/loops.cuh): every length from 1 to 40
// leaves every remainder past the last whole vector (8 bfloat16, 4 float32, 16 uint8), and views
// 1 to 3 elements into their storage are misaligned for the vectors and go one at a time; a
// bool result of float32 operands moves 4 to an access. Each matches the CPU bit for bit.
TEST(ElementwiseCuda, VectorisedLoopsMatchTheCpuAtEveryLengthAndOffset) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat32, kBFloat16, kUInt8}) {
    const Tensor a_storage = dtype == kUInt8 ? arange(0, 44, 1, dtype) : wiggly({44}, dtype);
    const Tensor b_storage = dtype == kUInt8 ? arange(44, 0, -1, dtype) : wiggly({44}, dtype, 0.7);
    const Tensor a_gpu_storage = a_storage.to(kGpu), b_gpu_storage = b_storage.to(kGpu);
    // Each operand at each offset: only where both start aligned (offset 0) do the two-operand
    // ops take the vector loop; elsewhere the strided one.
    for (int64_t a_offset = 0; a_offset < 4; ++a_offset)
      for (int64_t b_offset = 0; b_offset < 4; ++b_offset)
        for (int64_t length = 1; length <= 40; ++length) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + ", offsets " + std::to_string(a_offset) +
                       " and " + std::to_string(b_offset) + ", length " + std::to_string(length));
          const Tensor a = a_storage.narrow(0, a_offset, length);
          const Tensor b = b_storage.narrow(0, b_offset, length);
          const Tensor a_gpu = a_gpu_storage.narrow(0, a_offset, length);
          const Tensor b_gpu = b_gpu_storage.narrow(0, b_offset, length);
          EXPECT_TRUE(all_close(add(a_gpu, b_gpu).cpu(), add(a, b), 0, 0));
          if (dtype != kUInt8) EXPECT_TRUE(all_close(relu(a_gpu).cpu(), relu(a), 0, 0));
          EXPECT_TRUE(all_close(gt(a_gpu, b_gpu).cpu(), gt(a, b), 0, 0));
          EXPECT_TRUE(
              all_close(where(gt(a_gpu, b_gpu), a_gpu, b_gpu).cpu(), where(gt(a, b), a, b), 0, 0));
        }
  }
}

TEST(ElementwiseCuda, HalfAndBFloat16MatchCpu) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    // Both compute in float and round once; a few-ulp libm difference can flip one rounding.
    const double rtol = dtype == kFloat16 ? 1e-3 : 8e-3;
    for (const UnaryCase& c : unary_cases()) {
      SCOPED_TRACE(c.name);
      Tensor x = c.positive_domain ? positive({5, 9}, dtype) : wiggly({5, 9}, dtype);
      Tensor y = c.op(x.to(kGpu));
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(all_close(y.cpu(), c.op(x), 1e-3, rtol));
    }
    Tensor a = wiggly({5, 9}, dtype), b = positive({9}, dtype, 0.3);
    for (const auto& [name, op] : binary_cases()) {
      SCOPED_TRACE(name);
      EXPECT_TRUE(all_close(op(a.to(kGpu), b.to(kGpu)).cpu(), op(a, b), 1e-3, rtol));
    }
  }
}

TEST(ElementwiseCuda, IntegerOpsMatchCpuExactly) {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {kInt32, kInt64, kUInt8}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Tensor a = arange(0, 48, 1, dtype).view({4, 12});
    Tensor b = arange(3, 15, 1, dtype);
    Tensor a_gpu = a.to(kGpu), b_gpu = b.to(kGpu);
    EXPECT_TRUE(all_close(add(a_gpu, b_gpu, 2).cpu(), add(a, b, 2), 0, 0));
    EXPECT_TRUE(all_close(sub(b_gpu, a_gpu).cpu(), sub(b, a), 0, 0));  // wraps for uint8
    EXPECT_TRUE(all_close(mul(a_gpu, b_gpu).cpu(), mul(a, b), 0, 0));
    EXPECT_TRUE(all_close(maximum(a_gpu.t(), b_gpu.view({12, 1})).cpu(),
                          maximum(a.t(), b.view({12, 1})), 0, 0));
    EXPECT_TRUE(all_close(neg(a_gpu).cpu(), neg(a), 0, 0));
    EXPECT_TRUE(all_close(abs(sub(a_gpu, 20.0)).cpu(), abs(sub(a, 20.0)), 0, 0));
  }
}

TEST(ElementwiseCuda, ComparisonsAndWhereMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor a = wiggly({6, 8}), b = wiggly({8}, kFloat32, 0.6);
  Tensor a_gpu = a.to(kGpu), b_gpu = b.to(kGpu);
  using CompareFn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<CompareFn> comparisons = {
      [](const Tensor& x, const Tensor& y) { return eq(x, y); },
      [](const Tensor& x, const Tensor& y) { return ne(x, y); },
      [](const Tensor& x, const Tensor& y) { return lt(x, y); },
      [](const Tensor& x, const Tensor& y) { return le(x, y); },
      [](const Tensor& x, const Tensor& y) { return gt(x, y); },
      [](const Tensor& x, const Tensor& y) { return ge(x, y); },
  };
  for (const CompareFn& compare : comparisons) {
    Tensor mask = compare(a_gpu, b_gpu);
    EXPECT_EQ(mask.dtype(), kBool);
    EXPECT_EQ(to_vector<bool>(mask), to_vector<bool>(compare(a, b)));
    EXPECT_EQ(to_vector<bool>(compare(a_gpu, a_gpu)), to_vector<bool>(compare(a, a)));
  }
  EXPECT_EQ(to_vector<bool>(gt(a_gpu, 0.5)), to_vector<bool>(gt(a, 0.5)));
  EXPECT_EQ(to_vector<bool>(le(arange(10).to(kGpu), 4.5)), to_vector<bool>(le(arange(10), 4.5)));
  Tensor condition = gt(a, 0.0);
  Tensor chosen = where(condition.to(kGpu), a_gpu, b_gpu.view({1, 8}));
  EXPECT_TRUE(all_close(chosen.cpu(), where(condition, a, b.view({1, 8})), 0, 0));
}

TEST(ElementwiseCuda, InPlaceMethodsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  Tensor cpu_x = wiggly({5, 6}), row = wiggly({6}, kFloat32, 0.9);
  Tensor gpu_x = cpu_x.to(kGpu), gpu_row = row.to(kGpu);
  for (Tensor* x : {&cpu_x, &gpu_x}) {
    const Tensor& r = x->is_cuda() ? gpu_row : row;
    x->add_(r, 0.5).sub_(r).mul_(r).add_(1.0).mul_(3.0).div_(2.0);
    x->t().add_(r.narrow(0, 0, 5));  // in place through a transposed view
  }
  EXPECT_TRUE(all_close(gpu_x.cpu(), cpu_x, kAtol, kRtol));
}

TEST(ElementwiseCuda, BackwardMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  // The same graph on each device; gradients of broadcast inputs are summed back.
  auto run = [](Device device) {
    Tensor x = wiggly({3, 4}).to(device).requires_grad_(true);
    Tensor w = positive({4}, kFloat32, 0.5).to(device).requires_grad_(true);
    Tensor y = gelu(x * w) + sigmoid(x) / w - maximum(tanh(x), relu(x)) * exp(x).sqrt();
    y.backward(ones({3, 4}, TensorOptions(kFloat32).device(device)));
    return std::pair{x.grad().cpu(), w.grad().cpu()};
  };
  const auto [x_grad_cpu, w_grad_cpu] = run(Device(kCPU));
  const auto [x_grad_gpu, w_grad_gpu] = run(kGpu);
  EXPECT_TRUE(all_close(x_grad_gpu, x_grad_cpu, 1e-5, 1e-4));
  EXPECT_TRUE(all_close(w_grad_gpu, w_grad_cpu, 1e-5, 1e-4));
}

TEST(ElementwiseCuda, DeviceMismatchIsAnError) {
  SKIP_WITHOUT_CUDA();
  Tensor cpu_x = ones({2}), gpu_x = ones({2}, kGpu);
  EXPECT_ERROR_CONTAINS(add(cpu_x, gpu_x),
                        "add: expected both operands on the same device, got cpu and cuda:0");
  EXPECT_ERROR_CONTAINS(mul(gpu_x, cpu_x),
                        "mul: expected both operands on the same device, got cuda:0 and cpu");
  EXPECT_ERROR_CONTAINS(lt(gpu_x, cpu_x), "lt: expected both operands on the same device");
  EXPECT_ERROR_CONTAINS(where(gt(cpu_x, 0.0), gpu_x, gpu_x),
                        "where: expected the condition on cuda:0");
  EXPECT_ERROR_CONTAINS(gpu_x.add_(cpu_x), "add_: expected both operands on the same device");
}

TEST(ElementwiseCuda, MoreThanEightUnmergeableDimensionsIsAnError) {
  SKIP_WITHOUT_CUDA();
  // Every dimension stepped by 2: no two can merge, so nine remain.
  Tensor x = zeros(Shape(9, 4), kGpu);
  for (int64_t d = 0; d < 9; ++d) x = x.slice(d, 0, 4, 2);
  EXPECT_ERROR_CONTAINS(exp(x), "element-wise CUDA kernel: at most 8 dimensions are supported");
  // Contiguous tensors of any rank merge into one dimension.
  EXPECT_EQ(to_vector<float>(exp(zeros(Shape(10, 2), kGpu))), std::vector<float>(1024, 1.0f));
}

}  // namespace
}  // namespace minidl
