// Placeholders until the real implementation lands; this file is deleted then.
#include "ops/linalg.h"

namespace minidl {

Tensor matmul(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "matmul: not implemented yet"); return {}; }
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) { MINIDL_CHECK(false, "linear: not implemented yet"); return {}; }
void set_allow_tf32(bool allow) { MINIDL_CHECK(false, "set_allow_tf32: not implemented yet");  }
bool allow_tf32() { MINIDL_CHECK(false, "allow_tf32: not implemented yet"); return {}; }

}  // namespace minidl
