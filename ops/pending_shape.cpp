// Placeholders until the real implementation lands; this file is deleted then.
#include "ops/shape.h"

namespace minidl {

Tensor cat(const std::vector<Tensor>&, int64_t) { MINIDL_CHECK(false, "cat: not implemented yet"); return {}; }
Tensor stack(const std::vector<Tensor>&, int64_t) { MINIDL_CHECK(false, "stack: not implemented yet"); return {}; }
Tensor index_select(const Tensor&, int64_t, const Tensor&) { MINIDL_CHECK(false, "index_select: not implemented yet"); return {}; }
Tensor one_hot(const Tensor&, int64_t) { MINIDL_CHECK(false, "one_hot: not implemented yet"); return {}; }

}  // namespace minidl
