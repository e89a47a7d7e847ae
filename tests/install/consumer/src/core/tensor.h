#pragma once
// The user's own core/tensor.h, on the include path before minidl's: minidl's headers, which
// include each other as "minidl/core/tensor.h", must not pick this file up.
#include <string>

namespace app {
inline std::string tensor_h() { return "the consumer's own core/tensor.h"; }
}  // namespace app
