#pragma once
// Helpers for the layers' pretty_print, which follows PyTorch's repr.
#include <sstream>
#include <string>

#include "minidl/core/tensor_options.h"

namespace minidl::nn {

// Size2{3, 3} -> "(3, 3)", as PyTorch prints a pair.
inline std::string size2_repr(const Size2& size) {
  std::ostringstream out;
  out << '(' << size.h << ", " << size.w << ')';
  return out.str();
}

}  // namespace minidl::nn
