// Placeholders until the real implementation lands; this file is deleted then.
#include "ops/random.h"

namespace minidl {

void manual_seed(uint64_t seed) { MINIDL_CHECK(false, "manual_seed: not implemented yet");  }
Tensor rand(const Shape& sizes, TensorOptions options) { MINIDL_CHECK(false, "rand: not implemented yet"); return {}; }
Tensor randn(const Shape& sizes, TensorOptions options) { MINIDL_CHECK(false, "randn: not implemented yet"); return {}; }
Tensor& uniform_(Tensor& t, double low, double high) { MINIDL_CHECK(false, "uniform_: not implemented yet"); return t; }
Tensor& normal_(Tensor& t, double mean, double std) { MINIDL_CHECK(false, "normal_: not implemented yet"); return t; }

}  // namespace minidl
