#pragma once
// Options of nn::functional::pad, as LibTorch's PadFuncOptions:
//   F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(minidl::kReflect))
#include <cstdint>
#include <utility>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/ops/shape.h"

namespace minidl {

// The padding modes under LibTorch's spelling (torch::kReflect, ...).
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
inline constexpr PadMode kCircular = PadMode::Circular;

namespace nn {

struct PadFuncOptions {
  // (left, right) pairs from the last dim backwards, as F.pad's `pad`.
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  MINIDL_ARG(std::vector<int64_t>, pad);
  MINIDL_ARG(PadMode, mode) = PadMode::Constant;
  // The fill of constant padding; the other modes take none (0).
  MINIDL_ARG(double, value) = 0;
};

namespace functional {
using minidl::nn::PadFuncOptions;  // F::PadFuncOptions, as in LibTorch
}  // namespace functional

}  // namespace nn
}  // namespace minidl
