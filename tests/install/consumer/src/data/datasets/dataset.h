#pragma once
// The user's own data/datasets/dataset.h, on the include path before minidl's: minidl's headers,
// which include each other as "minidl/data/datasets/dataset.h", must not pick this file up.
#include <string>

namespace app {
inline std::string dataset_h() { return "the consumer's own data/datasets/dataset.h"; }
}  // namespace app
