#include "minidl/ops/dense_layout.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace minidl {

bool is_non_overlapping_and_dense(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> stride_size;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) stride_size.emplace_back(t.stride(d), t.size(d));
  std::sort(stride_size.begin(), stride_size.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : stride_size) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace minidl
