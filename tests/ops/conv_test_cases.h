#pragma once
// The table of conv2d cases shared by the CPU gradient checks (conv_test.cpp) and the CPU/CUDA
// parity tests (conv_cuda_test.cpp), with the inputs they are run on.
#include <cmath>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/ops/conv.h"
#include "test_util.h"

namespace minidl::conv_testing {

// How a case's input is laid out in memory.
enum class InputLayout {
  Contiguous,  // NCHW
  Permuted,    // an NHWC array permuted to [N, C, H, W]: a channels-last view
  Strided,     // every other column of an array twice as wide: not dense at all
};

struct ConvCase {
  std::string name;
  Shape input;   // [N, C_in, H, W]
  Shape weight;  // [C_out, C_in / groups, kH, kW]
  bool with_bias = true;
  Conv2dParams params;
  InputLayout layout = InputLayout::Contiguous;
};

inline std::vector<ConvCase> conv_cases() {
  using L = InputLayout;
  return {
      {"basic_3x3", {2, 3, 7, 7}, {4, 3, 3, 3}, true, {1, 0, 1, 1}, L::Contiguous},
      {"padding_1", {2, 3, 6, 5}, {4, 3, 3, 3}, true, {1, 1, 1, 1}, L::Contiguous},
      {"stride_2_padding_1", {2, 2, 7, 9}, {3, 2, 3, 3}, true, {2, 1, 1, 1}, L::Contiguous},
      {"stride_2x1_padding_0x1",
       {1, 2, 6, 5},
       {2, 2, 3, 2},
       true,
       {{2, 1}, {0, 1}, 1, 1},
       L::Contiguous},
      {"dilation_2", {1, 2, 9, 8}, {3, 2, 3, 3}, true, {1, 1, 2, 1}, L::Contiguous},
      {"groups_2", {2, 4, 5, 5}, {6, 2, 3, 3}, true, {1, 1, 1, 2}, L::Contiguous},
      {"depthwise", {1, 3, 5, 6}, {3, 1, 3, 3}, false, {1, 1, 1, 3}, L::Contiguous},
      {"kernel_1", {2, 4, 5, 5}, {3, 4, 1, 1}, true, {1, 0, 1, 1}, L::Contiguous},
      {"kernel_1_stride_2_projection",
       {2, 4, 6, 6},
       {5, 4, 1, 1},
       false,
       {2, 0, 1, 1},
       L::Contiguous},
      {"kernel_5_padding_2", {1, 2, 9, 9}, {2, 2, 5, 5}, true, {1, 2, 1, 1}, L::Contiguous},
      {"odd_sizes_batch_1", {1, 3, 11, 7}, {2, 3, 3, 3}, true, {1, 0, 1, 1}, L::Contiguous},
      {"non_square_kernel", {2, 2, 6, 7}, {3, 2, 2, 4}, true, {1, {1, 2}, 1, 1}, L::Contiguous},
      {"everything_at_once", {2, 4, 9, 9}, {4, 2, 3, 3}, false, {2, 2, 2, 2}, L::Contiguous},
      {"permuted_channels_last_input", {2, 3, 6, 6}, {4, 3, 3, 3}, true, {1, 1, 1, 1}, L::Permuted},
      {"strided_input", {2, 3, 6, 6}, {4, 3, 3, 3}, true, {2, 1, 1, 1}, L::Strided},
  };
}

// Distinct, sign-mixed values of the given shape (float64 on the CPU).
inline Tensor wiggly(const Shape& sizes, double phase = 0.0) {
  return testing::wiggly(sizes, phase, kFloat64);
}

// The case's input in its layout, float64 on the CPU.
inline Tensor make_input(const ConvCase& c) {
  const Shape& s = c.input;  // [N, C, H, W]
  switch (c.layout) {
    case InputLayout::Contiguous: return wiggly(s);
    case InputLayout::Permuted: return wiggly({s[0], s[2], s[3], s[1]}).permute({0, 3, 1, 2});
    case InputLayout::Strided: return wiggly({s[0], s[1], s[2], 2 * s[3]}).slice(3, 0, 2 * s[3], 2);
  }
  return {};
}

inline Tensor make_weight(const ConvCase& c) { return wiggly(c.weight, 1.0); }
inline Tensor make_bias(const ConvCase& c) {
  return c.with_bias ? wiggly({c.weight[0]}, 2.0) : Tensor();
}

}  // namespace minidl::conv_testing
