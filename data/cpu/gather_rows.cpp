// The CPU loop of gather_rows (data/loader/gather_rows_kernels.h): one memcpy per row, on the
// calling thread.
#include <cstddef>
#include <cstring>

#include "minidl/data/loader/gather_rows_kernels.h"

namespace minidl::cpu {

namespace {

void gather_rows_kernel(const Tensor& out, const Tensor& source, const Tensor& rows) {
  const int64_t count = rows.numel();
  if (count == 0 || source.size(0) == 0) return;  // no rows can be valid in an empty source
  const size_t row_bytes = source.nbytes() / static_cast<size_t>(source.size(0));
  const int64_t* row_indices = rows.data_ptr<int64_t>();
  const auto* from = static_cast<const std::byte*>(source.data_ptr());
  auto* to = static_cast<std::byte*>(out.data_ptr());
  for (int64_t j = 0; j < count; ++j)
    std::memcpy(to + j * row_bytes, from + row_indices[j] * row_bytes, row_bytes);
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl::data {

const GatherRowsKernels GatherRowsKernels::kCpu{
    .gather_rows = cpu::gather_rows_kernel,
};

}  // namespace minidl::data
