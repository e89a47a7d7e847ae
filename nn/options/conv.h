#pragma once
// Options of nn::Conv2d, nn::Conv1d and nn::ConvTranspose2d, and of their functional forms
// (the geometry without the channels).
#include <cstdint>
#include <type_traits>

#include "minidl/core/arg.h"
#include "minidl/core/tensor_options.h"
#include "minidl/nn/options/padding.h"

namespace minidl {

// A convolution's padding as LibTorch's torch::kValid (none) and torch::kSame (the output as
// large as the input, stride 1 only; an odd total puts the extra element after, as PyTorch).
struct ValidPadding {};
struct SamePadding {};
inline constexpr ValidPadding kValid{};
inline constexpr SamePadding kSame{};
// padding_mode's default, LibTorch's torch::kZeros: F::pad's constant mode with zeros.
inline constexpr PadMode kZeros = PadMode::Constant;

namespace nn {

// A convolution's padding: a number of elements on each side of each spatial dim (Extent:
// int64_t for Conv1d, Size2 for Conv2d: one number or {h, w}), kValid or kSame.
template <class Extent>
class ConvPadding {
 public:
  enum class Kind { Sides, Valid, Same };

  ConvPadding(int64_t both) : extent_(both) {}
  ConvPadding(int64_t height, int64_t width) requires std::is_same_v<Extent, Size2>
      : extent_(height, width) {}
  ConvPadding(Size2 extent) requires std::is_same_v<Extent, Size2> : extent_(extent) {}
  ConvPadding(ValidPadding) : kind_(Kind::Valid), extent_(0) {}
  ConvPadding(SamePadding) : kind_(Kind::Same), extent_(0) {}

  Kind kind() const { return kind_; }
  // Per side, for Kind::Sides; 0 for kValid, and not used for kSame.
  const Extent& extent() const { return extent_; }
  friend bool operator==(const ConvPadding&, const ConvPadding&) = default;

 private:
  Kind kind_ = Kind::Sides;
  Extent extent_;
};
using Conv2dPadding = ConvPadding<Size2>;
using Conv1dPadding = ConvPadding<int64_t>;

// Size2 fields take one number for both spatial dims or {h, w}: .stride(2), .padding({1, 0}).
struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(Size2, kernel_size);
  MINIDL_ARG(Size2, stride) = 1;
  // Elements added on each side of the input ({1, 0}, 1), or kValid or kSame.
  MINIDL_ARG(Conv2dPadding, padding) = 0;
  MINIDL_ARG(Size2, dilation) = 1;
  // Channels are split into `groups` independent convolutions; both channel counts must be
  // divisible by it.
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(bool, bias) = true;
  // What the padding holds: kZeros, or F::pad's kReflect, kReplicate or kCircular.
  MINIDL_ARG(PadMode, padding_mode) = kZeros;
};

struct Conv2dFuncOptions {
  MINIDL_ARG(Size2, stride) = 1;
  MINIDL_ARG(Conv2dPadding, padding) = 0;  // zeros, as the options' (or kValid, kSame)
  MINIDL_ARG(Size2, dilation) = 1;
  MINIDL_ARG(int64_t, groups) = 1;
};

// nn::Conv1d over [N, C_in, L]: one number per option.
struct Conv1dOptions {
  Conv1dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(int64_t, kernel_size);
  MINIDL_ARG(int64_t, stride) = 1;
  // Elements added on each side of the input, or kValid or kSame.
  MINIDL_ARG(Conv1dPadding, padding) = 0;
  MINIDL_ARG(int64_t, dilation) = 1;
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(bool, bias) = true;
  // What the padding holds: kZeros, or F::pad's kReflect, kReplicate or kCircular.
  MINIDL_ARG(PadMode, padding_mode) = kZeros;
};

struct Conv1dFuncOptions {
  MINIDL_ARG(int64_t, stride) = 1;
  MINIDL_ARG(Conv1dPadding, padding) = 0;  // zeros (or kValid, kSame)
  MINIDL_ARG(int64_t, dilation) = 1;
  MINIDL_ARG(int64_t, groups) = 1;
};

// nn::ConvTranspose2d, in LibTorch's order of options.
struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  MINIDL_ARG(int64_t, in_channels);
  MINIDL_ARG(int64_t, out_channels);
  MINIDL_ARG(Size2, kernel_size);
  MINIDL_ARG(Size2, stride) = 1;
  // dilation * (kernel_size - 1) - padding zeros are added on each side of the input, as the
  // gradient of a conv2d with this padding.
  MINIDL_ARG(Size2, padding) = 0;
  // Rows and columns added to one side of the output; below max(stride, dilation).
  MINIDL_ARG(Size2, output_padding) = 0;
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(bool, bias) = true;
  MINIDL_ARG(Size2, dilation) = 1;
};

struct ConvTranspose2dFuncOptions {
  MINIDL_ARG(Size2, stride) = 1;
  MINIDL_ARG(Size2, padding) = 0;
  MINIDL_ARG(Size2, output_padding) = 0;
  MINIDL_ARG(int64_t, groups) = 1;
  MINIDL_ARG(Size2, dilation) = 1;
};

namespace functional {
// F::Conv2dFuncOptions and the others, as in LibTorch.
using minidl::nn::Conv1dFuncOptions;
using minidl::nn::Conv2dFuncOptions;
using minidl::nn::ConvTranspose2dFuncOptions;
}  // namespace functional

}  // namespace nn
}  // namespace minidl
