#pragma once
// Helpers for the layers' pretty_print, which follows PyTorch's repr.
#include <sstream>
#include <string>

#include "minidl/core/tensor_options.h"
#include "minidl/nn/options/conv.h"

namespace minidl::nn {

// Size2{3, 3} -> "(3, 3)", as PyTorch prints a pair.
inline std::string size2_repr(const Size2& size) {
  std::ostringstream out;
  out << '(' << size.h << ", " << size.w << ')';
  return out.str();
}

// ", padding=(1, 1)" (`extent` printed), ", padding=valid" or ", padding=same"; nothing for
// the default, no padding.
template <class Extent>
std::string conv_padding_repr(const ConvPadding<Extent>& padding, const std::string& extent) {
  switch (padding.kind()) {
    case ConvPadding<Extent>::Kind::Valid: return ", padding=valid";
    case ConvPadding<Extent>::Kind::Same: return ", padding=same";
    case ConvPadding<Extent>::Kind::Sides: break;
  }
  return padding == ConvPadding<Extent>(0) ? "" : ", padding=" + extent;
}

// ", padding_mode=reflect" (replicate, circular); nothing for zeros, the default.
inline std::string padding_mode_repr(PadMode mode) {
  switch (mode) {
    case PadMode::Constant: return "";
    case PadMode::Reflect: return ", padding_mode=reflect";
    case PadMode::Replicate: return ", padding_mode=replicate";
    case PadMode::Circular: return ", padding_mode=circular";
  }
  return "";
}

}  // namespace minidl::nn
