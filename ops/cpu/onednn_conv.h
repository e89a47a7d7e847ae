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

// The input's gradient alone: the weight's and the bias's stay on im2col + OpenBLAS, whose
// GEMMs sum them in blocks. oneDNN 2.6's AVX2 weight-gradient kernel sums each element over a
// whole sample's positions in one accumulator, which took its float32 error past the tolerance
// conv_test.cpp allows (1.05e-3 on a 14x64x32x32 case), and it was not faster (bench_conv,
// ResNet-18's layer1 backward 184-261 ms against 197-214 ms, 2026-11-24).
std::optional<Tensor> onednn_conv2d_input_grad(const Tensor& grad_output, const Tensor& input,
                                               const Tensor& weight, const Conv2dParams& params);

}  // namespace minidl::cpu
