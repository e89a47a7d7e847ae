#pragma once
// CPU convolutions on oneDNN (ops/cpu/onednn_conv.cpp; ops/cpu/without_onednn.cpp in a build
// without it), called by ops/cpu/conv.cpp before its im2col path. Each answers nullopt where
// oneDNN is switched off (ops/onednn.h) or does not take the convolution (float64, a geometry it
// refuses; for the input's gradient, fewer than 4 input channels per group), and the caller then
// computes it itself. Arguments and results follow ops/conv_kernels.h.
#include <optional>

#include "minidl/core/tensor.h"
#include "minidl/ops/conv.h"

namespace minidl::cpu {

std::optional<Tensor> onednn_conv2d_forward(const Tensor& input, const Tensor& weight,
                                            const Tensor& bias, const Conv2dParams& params);

// The input's gradient.
std::optional<Tensor> onednn_conv2d_input_grad(const Tensor& grad_output, const Tensor& input,
                                               const Tensor& weight, const Conv2dParams& params);

struct OnednnConvWeightGrads {
  Tensor weight;  // the weight's dtype and shape
  Tensor bias;    // undefined unless asked for
};

// The weight's gradient (and the bias's, when `bias` is set), for bfloat16 on CPUs with AVX-512
// alone: there it saves converting both operands to float32 for im2col + OpenBLAS, which has no
// bfloat16 arithmetic. Float32 stays on im2col + OpenBLAS, whose GEMMs sum in blocks: oneDNN
// 2.6's AVX2 weight-gradient kernel sums each element over a whole sample's positions in one
// accumulator, which took its float32 error past the tolerance conv_test.cpp allows (1.05e-3 on
// a 14x64x32x32 case), and it was not faster (bench_conv, ResNet-18's layer1 backward 184-261 ms
// against 197-214 ms, 2026-11-24). The batch is cut into chunks of a fixed size, each summed by
// one primitive call in float32, and the chunks' sums are added in order, so that the result does
// not depend on the thread count.
std::optional<OnednnConvWeightGrads> onednn_conv2d_weight_grad(const Tensor& grad_output,
                                                               const Tensor& input,
                                                               const Tensor& weight,
                                                               const Conv2dParams& params,
                                                               bool bias);

}  // namespace minidl::cpu
