#include "minidl/data/loader/gather_rows.h"

#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/data/loader/gather_rows_kernels.h"

namespace minidl::data {

Tensor gather_rows(const Tensor& source, const Tensor& rows) {
  MINIDL_CHECK(source.defined() && source.dim() >= 1,
               "gather_rows: expected a source tensor with at least one dimension");
  MINIDL_CHECK(rows.defined() && rows.dim() == 1 && rows.dtype() == kInt64,
               "gather_rows: expected int64 rows of shape [B]");
  MINIDL_CHECK(rows.device() == source.device(), "gather_rows: source is on ", source.device(),
               " but rows on ", rows.device());
  Shape out_sizes = source.sizes();
  out_sizes[0] = rows.size(0);
  Tensor out = empty(out_sizes, source.options());
  kernels_for<GatherRowsKernels>(source.device())
      .gather_rows(out, source.contiguous(), rows.contiguous());
  return out;
}

}  // namespace minidl::data
