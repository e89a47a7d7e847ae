// Placeholders until the real implementation lands; this file is deleted then.
#include "ops/reduce.h"

namespace minidl {

Tensor sum(const Tensor& x) { MINIDL_CHECK(false, "sum: not implemented yet"); return {}; }
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) { MINIDL_CHECK(false, "sum: not implemented yet"); return {}; }
Tensor mean(const Tensor& x) { MINIDL_CHECK(false, "mean: not implemented yet"); return {}; }
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) { MINIDL_CHECK(false, "mean: not implemented yet"); return {}; }
Tensor max(const Tensor& x) { MINIDL_CHECK(false, "max: not implemented yet"); return {}; }
Tensor max(const Tensor& x, int64_t dim, bool keepdim) { MINIDL_CHECK(false, "max: not implemented yet"); return {}; }
Tensor min(const Tensor& x) { MINIDL_CHECK(false, "min: not implemented yet"); return {}; }
Tensor min(const Tensor& x, int64_t dim, bool keepdim) { MINIDL_CHECK(false, "min: not implemented yet"); return {}; }
Tensor argmax(const Tensor& x) { MINIDL_CHECK(false, "argmax: not implemented yet"); return {}; }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { MINIDL_CHECK(false, "argmax: not implemented yet"); return {}; }
Tensor var(const Tensor& x, int64_t correction) { MINIDL_CHECK(false, "var: not implemented yet"); return {}; }
Tensor var(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) { MINIDL_CHECK(false, "var: not implemented yet"); return {}; }

}  // namespace minidl
