// conv2d on the CPU: hand-worked values and gradients, a direct-loop reference across the case
// table and dtypes, layouts, chunked batches, degenerate shapes, every argument error, and f64
// gradient checks over the case table.
#include "minidl/ops/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conv_test_cases.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/core/autograd/node.h"
#include "minidl/ops/elementwise.h"
#include "test_util.h"

namespace minidl {
namespace {

using namespace conv_testing;
using testing::all_close;
using testing::ScopedThreadCount;

Tensor conv2d_with(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& p) {
  return conv2d(input, weight, bias, p.stride, p.padding, p.dilation, p.groups);
}

// torch.nn.functional.conv2d by its definition, in double on the host:
// out[n][co][oh][ow] = bias[co] + sum over ci of the group, i, j of
//   input[n][g * C_in/groups + ci][oh * sh - ph + i * dh][ow * sw - pw + j * dw]
//   * weight[co][ci][i][j]
// (zero outside the input).
Tensor reference_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Conv2dParams& p) {
  const std::vector<double> x = to_vector<double>(input), w = to_vector<double>(weight);
  const std::vector<double> b = bias.defined() ? to_vector<double>(bias) : std::vector<double>();
  const Shape out_sizes = conv2d_output_sizes(input.sizes(), weight.sizes(), p);
  const int64_t n_size = input.size(0), c_in = input.size(1);
  const int64_t h = input.size(2), w_in = input.size(3);
  const int64_t c_out = weight.size(0), group_in = weight.size(1), kh = weight.size(2),
                kw = weight.size(3);
  const int64_t group_out = c_out / p.groups, h_out = out_sizes[2], w_out = out_sizes[3];
  std::vector<double> out(static_cast<size_t>(shape_numel(out_sizes)));
  for (int64_t n = 0; n < n_size; ++n)
    for (int64_t co = 0; co < c_out; ++co)
      for (int64_t oh = 0; oh < h_out; ++oh)
        for (int64_t ow = 0; ow < w_out; ++ow) {
          double total = b.empty() ? 0.0 : b[co];
          const int64_t group = co / group_out;
          for (int64_t ci = 0; ci < group_in; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = oh * p.stride.h - p.padding.h + i * p.dilation.h;
                const int64_t iw = ow * p.stride.w - p.padding.w + j * p.dilation.w;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w_in) continue;
                const int64_t c = group * group_in + ci;
                total += x[((n * c_in + c) * h + ih) * w_in + iw] *
                         w[((co * group_in + ci) * kh + i) * kw + j];
              }
          out[((n * c_out + co) * h_out + oh) * w_out + ow] = total;
        }
  return from_host(out.data(), out_sizes, kFloat64);
}

// ---- forward values worked out by hand ----

TEST(Conv2d, HandWorkedThreeByThreeInputTwoByTwoKernel) {
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor input = arange(1, 10, 1, dtype).view({1, 1, 3, 3});  // [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    Tensor weight = tensor({1, 2, 3, 4}, dtype).view({1, 1, 2, 2});  // [[1, 2], [3, 4]]
    // [1*1 + 2*2 + 4*3 + 5*4, 2*1 + 3*2 + 5*3 + 6*4],
    // [4*1 + 5*2 + 7*3 + 8*4, 5*1 + 6*2 + 8*3 + 9*4]
    Tensor out = conv2d(input, weight);
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(all_close(out, tensor({37, 47, 67, 77}, kFloat64).view({1, 1, 2, 2}), 0, 0));
    Tensor with_bias = conv2d(input, weight, tensor({10}, dtype));
    EXPECT_TRUE(all_close(with_bias, tensor({47, 57, 77, 87}, kFloat64).view({1, 1, 2, 2}), 0, 0));
  }
}

TEST(Conv2d, HandWorkedStrideTwoSumsBlocks) {
  Tensor input = arange(1, 17, 1, kFloat32).view({1, 1, 4, 4});  // rows 1..4, 5..8, 9..12, 13..16
  Tensor weight = ones({1, 1, 2, 2});
  // Each output is the sum of one 2x2 block: 1+2+5+6, 3+4+7+8, 9+10+13+14, 11+12+15+16.
  Tensor out = conv2d(input, weight, {}, /*stride=*/2);
  EXPECT_TRUE(all_close(out, tensor({14, 22, 46, 54}, kFloat32).view({1, 1, 2, 2}), 0, 0));
}

TEST(Conv2d, HandWorkedPaddingOneSumsNeighbourhoods) {
  // [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
  Tensor input = arange(1, 10, 1, kFloat32).view({1, 1, 3, 3});
  // With a 3x3 kernel of ones and zero padding, each output sums the 3x3 neighbourhood inside
  // the input: the corner (0, 0) sees 1+2+4+5, the centre sees all nine values, ...
  Tensor out = conv2d(input, ones({1, 1, 3, 3}), {}, 1, /*padding=*/1);
  EXPECT_TRUE(all_close(
      out, tensor({12, 21, 16, 27, 45, 33, 24, 39, 28}, kFloat32).view({1, 1, 3, 3}), 0, 0));
}

TEST(Conv2d, HandWorkedDilationTwoSkipsRows) {
  Tensor input = arange(25, kFloat32).view({1, 1, 5, 5});  // x[r][c] = 5r + c
  Tensor weight =
      tensor({1, 0, 0, 1}, kFloat32).view({1, 1, 2, 2});  // taps (0, 0) and (2, 2) once dilated
  // out[i][j] = x[i][j] + x[i+2][j+2] = (5i + j) + (5(i+2) + j + 2) = 10i + 2j + 12
  Tensor out = conv2d(input, weight, {}, 1, 0, /*dilation=*/2);
  EXPECT_TRUE(all_close(
      out, tensor({12, 14, 16, 22, 24, 26, 32, 34, 36}, kFloat32).view({1, 1, 3, 3}), 0, 0));
}

TEST(Conv2d, HandWorkedGroupsKeepChannelsApart) {
  // Channel 0 = [[1, 2], [3, 4]], channel 1 = [[5, 6], [7, 8]].
  Tensor input = arange(1, 9, 1, kFloat32).view({1, 2, 2, 2});
  Tensor weight = tensor({2, -1}, kFloat32).view({2, 1, 1, 1});
  // groups 2: output channel 0 = 2 * channel 0, output channel 1 = -1 * channel 1.
  Tensor grouped = conv2d(input, weight, {}, 1, 0, 1, /*groups=*/2);
  EXPECT_TRUE(
      all_close(grouped, tensor({2, 4, 6, 8, -5, -6, -7, -8}, kFloat32).view({1, 2, 2, 2}), 0, 0));
  // groups 1 with the same numbers as one [1, 2, 1, 1] weight: 2 * channel 0 - channel 1.
  Tensor mixed = conv2d(input, weight.view({1, 2, 1, 1}));
  EXPECT_TRUE(all_close(mixed, tensor({-3, -2, -1, 0}, kFloat32).view({1, 1, 2, 2}), 0, 0));
}

TEST(Conv2d, OutputSizesFollowPyTorchsFormula) {
  // (H + 2p - d(k - 1) - 1) / s + 1: (9 + 2 - 2*2 - 1) / 2 + 1 = 4, (8 + 0 - 1*4 - 1) / 1 + 1 = 4
  Tensor out = conv2d(zeros({2, 3, 9, 8}), zeros({5, 3, 3, 5}), {}, {2, 1}, {1, 0}, {2, 1});
  EXPECT_EQ(out.sizes(), (Shape{2, 5, 4, 4}));
  EXPECT_EQ(conv2d_output_sizes({2, 3, 9, 8}, {5, 3, 3, 5}, {{2, 1}, {1, 0}, {2, 1}, 1}),
            (Shape{2, 5, 4, 4}));
}

// ---- against the direct-loop reference ----

TEST(Conv2d, MatchesReferenceOnEveryCaseInFloat64AndFloat32) {
  for (const ConvCase& c : conv_cases()) {
    const Tensor input = make_input(c), weight = make_weight(c), bias = make_bias(c);
    const Tensor expected = reference_conv2d(input, weight, bias, c.params);
    EXPECT_TRUE(all_close(conv2d_with(input, weight, bias, c.params), expected, 1e-12, 1e-12))
        << c.name;
    const Tensor bias32 = bias.defined() ? bias.to(kFloat32) : Tensor();
    EXPECT_TRUE(all_close(conv2d_with(input.to(kFloat32), weight.to(kFloat32), bias32, c.params),
                          expected, 1e-5, 1e-5))
        << c.name;
  }
}

TEST(Conv2d, HalfAndBFloat16ComputeInFloat) {
  const ConvCase c = conv_cases()[2];  // stride 2, padding 1, with bias
  for (DType dtype : {kFloat16, kBFloat16}) {
    const Tensor input = make_input(c).to(dtype), weight = make_weight(c).to(dtype),
                 bias = make_bias(c).to(dtype);
    const Tensor out = conv2d_with(input, weight, bias, c.params);
    EXPECT_EQ(out.dtype(), dtype);
    // The exact result for the rounded inputs, rounded once more to the 16-bit type.
    const Tensor expected =
        reference_conv2d(input.to(kFloat64), weight.to(kFloat64), bias.to(kFloat64), c.params);
    const double rounding = dtype == kFloat16 ? 1e-3 : 8e-3;
    EXPECT_TRUE(all_close(out, expected, rounding, rounding)) << dtype;
  }
}

TEST(Conv2d, ChannelsLastInputGivesChannelsLastOutputAndGradient) {
  const Tensor nhwc = wiggly({2, 5, 6, 3}).to(kFloat32);
  Tensor input = nhwc.permute({0, 3, 1, 2}).requires_grad_();  // [2, 3, 5, 6], channels-last
  ASSERT_EQ(input.suggest_memory_format(), MemoryFormat::ChannelsLast);
  const Tensor weight = wiggly({4, 3, 3, 3}, 1.0).to(kFloat32).requires_grad_();
  Tensor out = conv2d(input, weight, {}, 1, 1);
  EXPECT_EQ(out.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(all_close(out, reference_conv2d(input, weight, {}, {1, 1, 1, 1}), 1e-5, 1e-5));
  // The node's own gradients: the input's in the input's layout, the weight's in the weight's.
  // (Accumulating into a leaf's .grad makes its own contiguous copy.)
  const Tensor grad_out = wiggly(out.sizes(), 3.0).to(kFloat32);
  const std::vector<Tensor> grads = out.grad_fn()->apply(grad_out);
  EXPECT_EQ(grads[0].suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(grads[1].is_contiguous());
  // The same gradients as for the contiguous copy of the input.
  Tensor contiguous_input = input.detach().contiguous().requires_grad_();
  Tensor contiguous_weight = weight.detach().requires_grad_();
  conv2d(contiguous_input, contiguous_weight, {}, 1, 1).backward(grad_out);
  EXPECT_TRUE(all_close(grads[0], contiguous_input.grad(), 0, 0));
  EXPECT_TRUE(all_close(grads[1], contiguous_weight.grad(), 0, 0));
}

TEST(Conv2d, BatchesSplitIntoChunksGiveTheSameResultsAsSmallerBatches) {
  // 16 channels of 32x32 with a 3x3 kernel and 8 output channels: about 0.6 MB of columns per
  // float32 sample, so both batches are computed in chunks of one sample, which the threads
  // share out (a skinny convolution, see ops/cpu/conv.cpp).
  Tensor input = wiggly({40, 16, 32, 32}).to(kFloat32).requires_grad_();
  Tensor weight = (wiggly({8, 16, 3, 3}, 1.0) * 0.1).to(kFloat32).requires_grad_();
  Tensor bias = wiggly({8}, 2.0).to(kFloat32).requires_grad_();
  Tensor out = conv2d(input, weight, bias, 1, 1);
  Tensor grad_out = wiggly(out.sizes(), 3.0).to(kFloat32);
  out.backward(grad_out);

  // The weight and bias gradients of the whole batch are the sums over its parts.
  Tensor summed_weight_grad = zeros(weight.sizes());
  Tensor summed_bias_grad = zeros(bias.sizes());
  for (int64_t first = 0; first < 40; first += 10) {
    Tensor part = input.detach().narrow(0, first, 10).requires_grad_();
    Tensor w = weight.detach().requires_grad_(), b = bias.detach().requires_grad_();
    Tensor part_out = conv2d(part, w, b, 1, 1);
    EXPECT_TRUE(all_close(part_out, out.detach().narrow(0, first, 10), 1e-5, 1e-5))
        << "samples from " << first;
    part_out.backward(grad_out.narrow(0, first, 10));
    EXPECT_TRUE(all_close(part.grad(), input.grad().narrow(0, first, 10), 1e-5, 1e-5))
        << "samples from " << first;
    summed_weight_grad.add_(w.grad());
    summed_bias_grad.add_(b.grad());
  }
  EXPECT_TRUE(all_close(weight.grad(), summed_weight_grad, 1e-3, 1e-4));
  EXPECT_TRUE(all_close(bias.grad(), summed_bias_grad, 1e-3, 1e-4));
}

// sum(a * b) in double.
double dot(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = to_vector<double>(a), y = to_vector<double>(b);
  double total = 0;
  for (size_t i = 0; i < x.size(); ++i) total += x[i] * y[i];
  return total;
}

TEST(Conv2d, ChunkedBatchesMatchTheReferenceForEveryThreadCount) {
  // A skinny convolution (8 output channels: each thread runs its own chunks and sums its own
  // weight gradient) and a wide one (32 outputs from 64 channels: chunks of 6 samples one after
  // the other, OpenBLAS threading each GEMM), each over several chunks, with 1, 2 and 3 threads.
  struct Case {
    const char* name;
    Shape input, weight;
  };
  const Case cases[] = {{"skinny", {13, 16, 32, 32}, {8, 16, 3, 3}},
                        {"wide", {14, 64, 32, 32}, {32, 64, 3, 3}}};
  for (const Case& c : cases) {
    const Tensor input = wiggly(c.input);
    const Tensor weight = wiggly(c.weight, 1.0) * 0.1;
    const Tensor expected = reference_conv2d(input, weight, {}, {1, 1, 1, 1});
    const Tensor grad_out = wiggly(expected.sizes(), 3.0);
    // In float64: conv2d is linear in each argument, so <out, g> = <x, dL/dx> = <w, dL/dw>.
    Tensor x64 = input.detach().requires_grad_(), w64 = weight.detach().requires_grad_();
    conv2d(x64, w64, {}, 1, 1).backward(grad_out);
    const double reference = dot(expected, grad_out);
    EXPECT_NEAR(dot(x64, x64.grad()), reference, 1e-10 * std::abs(reference)) << c.name;
    EXPECT_NEAR(dot(w64, w64.grad()), reference, 1e-10 * std::abs(reference)) << c.name;
    // In float32, with each thread count: the reference's values and the float64 gradients.
    for (int threads : {1, 2, 3}) {
      const ScopedThreadCount thread_count(threads);
      Tensor x = input.to(kFloat32).requires_grad_(), w = weight.to(kFloat32).requires_grad_();
      Tensor out = conv2d(x, w, {}, 1, 1);
      EXPECT_TRUE(all_close(out, expected, 1e-4, 1e-4)) << c.name << ", threads " << threads;
      out.backward(grad_out.to(kFloat32));
      EXPECT_TRUE(all_close(x.grad(), x64.grad(), 1e-4, 1e-4)) << c.name << ", threads " << threads;
      EXPECT_TRUE(all_close(w.grad(), w64.grad(), 1e-3, 1e-4)) << c.name << ", threads " << threads;
    }
  }
}

TEST(Conv2d, DegenerateShapes) {
  // No samples: an empty output, and gradients of zeros.
  Tensor weight = ones({4, 3, 3, 3}).requires_grad_();
  Tensor bias = ones({4}).requires_grad_();
  Tensor empty_batch = conv2d(zeros({0, 3, 5, 5}), weight, bias);
  EXPECT_EQ(empty_batch.sizes(), (Shape{0, 4, 3, 3}));
  empty_batch.backward(zeros({0, 4, 3, 3}));
  EXPECT_TRUE(all_close(weight.grad(), zeros({4, 3, 3, 3}), 0, 0));
  EXPECT_TRUE(all_close(bias.grad(), zeros({4}), 0, 0));
  // No output channels.
  EXPECT_EQ(conv2d(ones({2, 3, 5, 5}), zeros({0, 3, 3, 3})).sizes(), (Shape{2, 0, 3, 3}));
  // No input channels: every output is the bias, whose gradient counts the outputs.
  Tensor channel_bias = tensor({1, -2}, kFloat32).requires_grad_();
  Tensor no_channels = conv2d(zeros({2, 0, 4, 4}), zeros({2, 0, 3, 3}), channel_bias);
  EXPECT_TRUE(
      all_close(no_channels, channel_bias.detach().view({1, 2, 1, 1}).expand({2, 2, 2, 2}), 0, 0));
  no_channels.backward(ones({2, 2, 2, 2}));
  EXPECT_TRUE(all_close(channel_bias.grad(), tensor({8, 8}, kFloat32), 0, 0));
}

TEST(Conv2d, CudnnDeterministicIsOffByDefaultAndCanBeSwitched) {
  EXPECT_FALSE(cudnn_deterministic());
  set_cudnn_deterministic(true);
  EXPECT_TRUE(cudnn_deterministic());
  // The CPU path is deterministic either way: the same call gives the same bits.
  const ConvCase c = conv_cases()[5];
  const Tensor input = make_input(c).to(kFloat32), weight = make_weight(c).to(kFloat32);
  EXPECT_TRUE(all_close(conv2d_with(input, weight, {}, c.params),
                        conv2d_with(input, weight, {}, c.params), 0, 0));
  set_cudnn_deterministic(false);
  EXPECT_FALSE(cudnn_deterministic());
}

TEST(Conv2d, CudnnBenchmarkIsOffByDefaultAndChangesNothingOnTheCpu) {
  EXPECT_FALSE(cudnn_benchmark());
  const ConvCase c = conv_cases()[5];
  const Tensor input = make_input(c).to(kFloat32), weight = make_weight(c).to(kFloat32);
  const Tensor off = conv2d_with(input, weight, {}, c.params);
  set_cudnn_benchmark(true);
  EXPECT_TRUE(cudnn_benchmark());
  EXPECT_TRUE(all_close(conv2d_with(input, weight, {}, c.params), off, 0, 0));
  set_cudnn_benchmark(false);
  EXPECT_FALSE(cudnn_benchmark());
}

// ---- errors ----

TEST(Conv2d, BadArgumentsAreErrorsNamingTheShapes) {
  const Tensor input = zeros({2, 4, 6, 6}), weight = zeros({6, 4, 3, 3});
  EXPECT_ERROR_CONTAINS(conv2d(zeros({4, 6, 6}), weight),
                        "conv2d: expected a 4-D input [N, C_in, H, W], got shape [4, 6, 6]");
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({6, 4, 3})),
                        "conv2d: wrong weight rank: expected a 4-D weight [C_out, C_in / groups, "
                        "kH, kW], got shape [6, 4, 3] (input shape [2, 4, 6, 6])");
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({6, 3, 3, 3})),
                        "conv2d: channel mismatch: input of shape [2, 4, 6, 6] has C_in = 4, but "
                        "weight of shape [6, 3, 3, 3] with groups = 1 expects weight.size(1) * "
                        "groups = 3");
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({6, 4, 3, 3}), {}, 1, 0, 1, 2),
                        "conv2d: channel mismatch: input of shape [2, 4, 6, 6] has C_in = 4, but "
                        "weight of shape [6, 4, 3, 3] with groups = 2 expects weight.size(1) * "
                        "groups = 8");
  EXPECT_ERROR_CONTAINS(conv2d(zeros({2, 3, 6, 6}), zeros({6, 1, 3, 3}), {}, 1, 0, 1, 2),
                        "conv2d: groups = 2 must divide the input channels C_in = 3 (input shape "
                        "[2, 3, 6, 6])");
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({5, 2, 3, 3}), {}, 1, 0, 1, 2),
                        "conv2d: groups = 2 must divide the output channels C_out = 5 (weight "
                        "shape [5, 2, 3, 3])");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, {}, 1, 0, 1, 0),
                        "conv2d: expected groups >= 1, got 0");
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({6, 4, 7, 3})),
                        "conv2d: kernel larger than the padded input: the (dilated) kernel is 7x3 "
                        "but the padded input is 6x6 (input shape [2, 4, 6, 6], weight shape "
                        "[6, 4, 7, 3], padding (0, 0), dilation (1, 1))");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, {}, 1, 0, /*dilation=*/3),
                        "conv2d: kernel larger than the padded input: the (dilated) kernel is 7x7 "
                        "but the padded input is 6x6");
  // Padding makes room: the same kernel fits once the input is padded by one.
  EXPECT_EQ(conv2d(input, zeros({6, 4, 7, 3}), {}, 1, {1, 0}).sizes(), (Shape{2, 6, 2, 4}));
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({6, 4, 0, 3})),
                        "conv2d: expected a kernel of positive size, got weight shape "
                        "[6, 4, 0, 3]");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, {}, /*stride=*/0),
                        "conv2d: expected a positive stride, got (0, 0)");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, {}, {1, -2}),
                        "conv2d: expected a positive stride, got (1, -2)");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, {}, 1, 0, {0, 1}),
                        "conv2d: expected a positive dilation, got (0, 1)");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, {}, 1, {-1, 0}),
                        "conv2d: expected a non-negative padding, got (-1, 0)");
  EXPECT_ERROR_CONTAINS(conv2d(input, zeros({6, 4, 3, 3}, kFloat64)),
                        "conv2d: expected input, weight and bias of one dtype, got input float32 "
                        "and weight float64 (input shape [2, 4, 6, 6], weight shape [6, 4, 3, 3])");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, zeros({6}, kFloat16)),
                        "conv2d: expected input, weight and bias of one dtype, got input float32 "
                        "and bias float16 (input shape [2, 4, 6, 6], bias shape [6])");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, zeros({4})),
                        "conv2d: expected a bias of shape [6] (C_out of weight shape "
                        "[6, 4, 3, 3]), got shape [4]");
  EXPECT_ERROR_CONTAINS(conv2d(input, weight, zeros({1, 6})),
                        "conv2d: expected a bias of shape [6] (C_out of weight shape "
                        "[6, 4, 3, 3]), got shape [1, 6]");
  EXPECT_ERROR_CONTAINS(conv2d(zeros({2, 4, 6, 6}, kInt64), zeros({6, 4, 3, 3}, kInt64)),
                        "conv2d: expected floating-point tensors (float32, float64, float16 or "
                        "bfloat16), got int64 (input shape [2, 4, 6, 6])");
  EXPECT_ERROR_CONTAINS(conv2d(Tensor(), weight),
                        "conv2d: argument 'input' is an undefined tensor (default-constructed)");
}

// ---- gradients ----

TEST(Conv2d, HandWorkedGradients) {
  Tensor input = arange(1, 10, 1, kFloat32).view({1, 1, 3, 3}).requires_grad_();
  Tensor weight =
      tensor({1, 2, 3, 4}, kFloat32).view({1, 1, 2, 2}).requires_grad_();  // [[1, 2], [3, 4]]
  Tensor bias = tensor({10}, kFloat32).requires_grad_();
  conv2d(input, weight, bias).backward(ones({1, 1, 2, 2}));
  // grad_weight[a][b] sums the input over the four positions the tap (a, b) visits:
  // 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9.
  EXPECT_TRUE(
      all_close(weight.grad(), tensor({12, 16, 24, 28}, kFloat32).view({1, 1, 2, 2}), 0, 0));
  // grad_input[r][c] sums the taps that touch (r, c): the corners one tap each, the centre all.
  EXPECT_TRUE(all_close(input.grad(),
                        tensor({1, 3, 2, 4, 10, 6, 3, 7, 4}, kFloat32).view({1, 1, 3, 3}), 0, 0));
  EXPECT_TRUE(all_close(bias.grad(), tensor({4}, kFloat32), 0, 0));  // four outputs
}

TEST(Conv2d, GradientOfAnInputChangedInPlaceIsAnError) {
  Tensor input = wiggly({1, 2, 5, 5}).requires_grad_();
  Tensor weight = wiggly({3, 2, 3, 3}, 1.0);
  Tensor out = conv2d(input, weight);
  weight.mul_(2.0);
  EXPECT_ERROR_CONTAINS(out.backward(ones(out.sizes(), kFloat64)),
                        "was modified by an in-place operation");
}

TEST(Conv2dGradcheck, EveryCaseOfTheTable) {
  for (const ConvCase& c : conv_cases()) {
    const Conv2dParams params = c.params;
    auto fn = [params](const std::vector<Tensor>& in) {
      return conv2d_with(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), params);
    };
    std::vector<Tensor> inputs{make_input(c).requires_grad_(), make_weight(c).requires_grad_()};
    if (c.with_bias) inputs.push_back(make_bias(c).requires_grad_());
    GradcheckResult result = gradcheck(fn, inputs);
    EXPECT_TRUE(result.ok) << c.name << ": " << result.message;
  }
}

TEST(Conv2dGradcheck, OnlySomeInputsRequireGrad) {
  const ConvCase c = conv_cases()[5];  // groups 2 with bias
  const Conv2dParams params = c.params;
  auto fn = [params](const std::vector<Tensor>& in) {
    return conv2d_with(in[0], in[1], in[2], params);
  };
  GradcheckResult frozen_weight =
      gradcheck(fn, {make_input(c).requires_grad_(), make_weight(c), make_bias(c)});
  EXPECT_TRUE(frozen_weight.ok) << frozen_weight.message;
  GradcheckResult frozen_input =
      gradcheck(fn, {make_input(c), make_weight(c).requires_grad_(), make_bias(c)});
  EXPECT_TRUE(frozen_input.ok) << frozen_input.message;
  GradcheckResult bias_only =
      gradcheck(fn, {make_input(c), make_weight(c), make_bias(c).requires_grad_()});
  EXPECT_TRUE(bias_only.ok) << bias_only.message;
}

}  // namespace
}  // namespace minidl
