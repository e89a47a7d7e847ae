#pragma once
// The user's own nn/module.h, on the include path before minidl's: minidl's headers, which include
// each other as "minidl/nn/module.h", must not pick this file up.
#include <string>

namespace app {
inline std::string module_h() { return "the consumer's own nn/module.h"; }
}  // namespace app
