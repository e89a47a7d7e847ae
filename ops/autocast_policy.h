#pragma once
// The autocast policy: which ops run in the autocast dtype and which in float32 (one typed
// table, kAutocastPolicy in autocast_policy.cpp), and AutocastCall, which an op's public entry
// point consults first:
//
//   Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, ...) {
//     if (amp::AutocastCall cast{amp::AutocastOp::Conv2d, {input, weight, bias}})
//       return conv2d(cast[0], cast[1], cast[2], ...);
//     ...
//
// When autocast is on (core/autocast.h), AutocastCall casts the floating inputs as the op's
// policy says and switches autocast off until it goes out of scope, so the op re-entered with
// cast inputs (and whatever ops it calls inside) runs as written. When autocast is off it is
// false and costs one thread-local read. Rules, as PyTorch's autocast:
//  - LowerPrecision: float32, float16 and bfloat16 inputs become the autocast dtype; a float32
//    parameter (a leaf that requires grad) through the weight cache (amp::cached_cast).
//  - Float32: float16 and bfloat16 inputs become float32.
//  - float64 and non-floating inputs (class targets) are never cast; undefined ones pass.
// On CUDA, Conv2d inputs are also laid out channels-last (NHWC), the layout tensor-core
// convolutions prefer; the weight's channels-last cast is what the cache keeps.
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/tensor.h"

namespace minidl::amp {

// Every op that consults the policy. Ops not listed run in the dtype of their inputs
// (batch_norm among them, as in PyTorch: 16-bit input, float32 statistics and parameters).
enum class AutocastOp {
  Conv2d,
  Linear,
  Matmul,
  Softmax,
  LogSoftmax,
  CrossEntropy,
  NllLoss,
  MseLoss,
  BinaryCrossEntropyWithLogits,
  BinaryCrossEntropy,
  SmoothL1Loss,
  L1Loss,
  HuberLoss,
  KlDiv,
  Sum,
  Mean,
  Var,
  LayerNorm,
  ScaledDotProductAttention,
  ConvTranspose2d,
  GroupNorm,
};

enum class CastPolicy {
  LowerPrecision,  // run in the autocast dtype (tensor cores)
  Float32,         // run in float32 (range and accuracy matter more than speed)
};

CastPolicy cast_policy(AutocastOp op);
std::string_view autocast_op_name(AutocastOp op);

class AutocastCall {
 public:
  AutocastCall(AutocastOp op, std::initializer_list<std::reference_wrapper<const Tensor>> inputs);
  AutocastCall(const AutocastCall&) = delete;
  AutocastCall& operator=(const AutocastCall&) = delete;

  // True when autocast applied: re-enter the op with the cast inputs.
  explicit operator bool() const { return autocast_off_.has_value(); }
  // The i-th input as cast (in the order given).
  const Tensor& operator[](size_t index) const { return cast_inputs_[index]; }

 private:
  std::vector<Tensor> cast_inputs_;
  std::optional<NoAutocastGuard> autocast_off_;
};

}  // namespace minidl::amp
