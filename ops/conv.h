#pragma once
// 2-D convolution (cross-correlation, as torch.nn.functional.conv2d), differentiable in the
// input, the weight and the bias. im2col + OpenBLAS GEMM on the CPU, cuDNN on CUDA.
#include <cstdint>

#include "minidl/core/tensor.h"

namespace minidl {

// input [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined
// -> [N, C_out, H_out, W_out] with, per spatial dimension,
//   H_out = (H + 2 * padding.h - dilation.h * (kH - 1) - 1) / stride.h + 1.
// The output (and the input's gradient) takes the input's memory format: a channels-last
// input gives a channels-last output. float32, float64 (CPU only), float16 and bfloat16.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, Size2 stride = 1,
              Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1);

// When on, cuDNN convolutions use only deterministic algorithms, so a run repeats bit for bit
// (like torch.backends.cudnn.deterministic). Off by default. CPU convolutions are always
// deterministic.
void set_cudnn_deterministic(bool deterministic);
bool cudnn_deterministic();

// When on, each cuDNN convolution pass picks its algorithm, once per shape, by running every
// candidate and timing it (cudnnFind*AlgorithmEx), like torch.backends.cudnn.benchmark; off,
// the default, cuDNN's heuristics rank them without running anything. The first step of each
// new shape then waits for the device (a warm-up cost, never the hot path's), and the choice
// may differ from run to run, so deterministic mode ignores it and keeps the heuristics.
void set_cudnn_benchmark(bool benchmark);
bool cudnn_benchmark();

// The geometry of one convolution, validated, as the kernels of ops/conv_kernels.h receive it.
struct Conv2dParams {
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  int64_t groups = 1;
};

// [N, C_out, H_out, W_out] for a validated input and weight.
Shape conv2d_output_sizes(const Shape& input_sizes, const Shape& weight_sizes,
                          const Conv2dParams& params);

// Which gradients a convolution's backward computes.
struct Conv2dGradRequest {
  bool input = false;
  bool weight = false;
  bool bias = false;
};

// The gradients of one backward (undefined where not requested).
struct Conv2dGrads {
  Tensor input;   // [N, C_in, H, W]
  Tensor weight;  // [C_out, C_in / groups, kH, kW]
  Tensor bias;    // [C_out]
};

}  // namespace minidl
