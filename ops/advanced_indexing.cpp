// Indexing by one tensor, as LibTorch's x.index({mask}), x.index({indices}), index_put and
// index_put_. Compositions: the true positions of a mask come from a stable argsort (as
// masked_select's), rows are read with index_select and written with scatter (the last value
// of a repeated index wins) or index_add (accumulate: position order), so both backends, the
// gradients and determinism come from those ops.
#include <string>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"

namespace minidl {

namespace {

// Whether a tensor of shape `from` broadcasts to `to` (without growing `to`).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t skipped = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[skipped + d]) return false;
  return true;
}

// The dims of x after the first `leading`.
Shape trailing_sizes(const Tensor& x, int64_t leading) {
  return Shape(x.sizes().begin() + leading, x.sizes().end());
}

// Checks the index tensor against x; returns how many leading dims of x it indexes.
int64_t check_index(const Tensor& x, const Tensor& index, const char* op) {
  check_defined(x, op, "input");
  MINIDL_CHECK(index.dtype() == kBool || index.dtype() == kInt64, op,
               ": expected a bool mask or an int64 index tensor, got ", index.dtype());
  MINIDL_CHECK(index.device() == x.device(), op, ": expected the index on ", x.device(),
               " with the tensor, got ", index.device());
  if (index.dtype() == kInt64) {
    MINIDL_CHECK(x.dim() >= 1, op, ": cannot index a 0-d tensor with an int64 index");
    return 1;
  }
  MINIDL_CHECK(index.dim() <= x.dim(), op, ": a mask of shape ", index.sizes(),
               " has more dims than the tensor of shape ", x.sizes());
  for (int64_t d = 0; d < index.dim(); ++d)
    MINIDL_CHECK(index.size(d) == x.size(d), op, ": the shape of the mask ", index.sizes(),
                 " does not match the shape of the indexed tensor ", x.sizes(), " at dim ", d);
  return index.dim();
}

// The flat row numbers of x's leading dims that `index` names: a mask's true positions in
// row-major order (one wait for the device on CUDA, to learn their count), or an int64 index
// flattened with negative entries counted from the end.
Tensor row_positions(const Tensor& x, const Tensor& index, const char* op) {
  NoGradGuard no_grad;
  if (index.dtype() == kInt64) {
    const Tensor flat = index.reshape({-1});
    // Checked here on the CPU, so the error names this op rather than the index_select, scatter
    // or index_add it is made of; on CUDA those kernels' device-side checks report it without a
    // wait for the device.
    if (flat.is_cpu()) {
      const int64_t size = x.size(0);
      const std::vector<int64_t> values = to_vector<int64_t>(flat.contiguous());
      for (size_t i = 0; i < values.size(); ++i)
        MINIDL_CHECK(values[i] >= -size && values[i] < size, op, ": index ", values[i],
                     " at position ", i, " is out of range for dimension 0 of size ", size);
    }
    return where(flat < 0, flat + x.size(0), flat);  // int64 stays int64
  }
  const Tensor flat_mask = index.reshape({-1});
  const int64_t count = sum(flat_mask).item<int64_t>();
  return argsort(flat_mask, 0, /*descending=*/true).narrow(0, 0, count);
}

// x with its first `leading` dims flattened into one: [rows, trailing...].
Tensor rows_of(const Tensor& x, int64_t leading) {
  Shape sizes = trailing_sizes(x, leading);
  sizes.insert(sizes.begin(), -1);
  return x.reshape(sizes);
}

const indexing::TensorIndex& only_tensor_index(const std::vector<indexing::TensorIndex>& indices,
                                               const char* op) {
  MINIDL_CHECK(indices.size() == 1 && indices[0].is_tensor(), op,
               ": expected exactly one index, a bool mask or an int64 index tensor, got ",
               indices.size(), " indices", indices.size() == 1 ? " (not a tensor)" : "");
  return indices[0];
}

}  // namespace

Tensor Tensor::index_by_tensor(const Tensor& index) const {
  const ProfileScope profile("index", {*this, index});
  const int64_t leading = check_index(*this, index, "index");
  const Tensor rows =
      index_select(rows_of(*this, leading), 0, row_positions(*this, index, "index"));
  if (index.dtype() == kBool) return rows;  // [count, trailing...]
  Shape sizes = index.sizes();
  const Shape trailing = trailing_sizes(*this, 1);
  sizes.insert(sizes.end(), trailing.begin(), trailing.end());
  return rows.reshape(sizes);  // index.shape + trailing
}

Tensor index_put(const Tensor& x, const std::vector<indexing::TensorIndex>& indices,
                 const Tensor& values, bool accumulate) {
  const ProfileScope profile("index_put", {x, values});
  const Tensor& index = only_tensor_index(indices, "index_put").tensor();
  const int64_t leading = check_index(x, index, "index_put");
  check_defined(values, "index_put", "values");
  MINIDL_CHECK(values.dtype() == x.dtype() && values.device() == x.device(),
               "index_put: expected values of the tensor's dtype ", x.dtype(), " on ", x.device(),
               ", got ", values.dtype(), " on ", values.device());
  const Shape trailing = trailing_sizes(x, leading);
  if (index.dtype() == kBool && broadcasts_to(values.sizes(), trailing)) {
    // The same values for every selected row: an element-wise select, no wait for the device.
    Shape mask_sizes = index.sizes();
    mask_sizes.resize(static_cast<size_t>(x.dim()), 1);
    const Tensor mask = index.view(mask_sizes);
    return where(mask, accumulate ? x + values : values, x);
  }
  const Tensor positions = row_positions(x, index, "index_put");
  const int64_t count = positions.size(0);
  // values broadcast to the indexing result's shape, then seen as [count, trailing...].
  Shape result_sizes = index.dtype() == kBool ? Shape{count} : index.sizes();
  result_sizes.insert(result_sizes.end(), trailing.begin(), trailing.end());
  MINIDL_CHECK(broadcasts_to(values.sizes(), result_sizes), "index_put: values of shape ",
               values.sizes(), " cannot be broadcast to the indexing result's shape ",
               result_sizes);
  Shape row_sizes = trailing;
  row_sizes.insert(row_sizes.begin(), count);
  const Tensor value_rows = values.expand(result_sizes).reshape(row_sizes);
  const Tensor rows = rows_of(x, leading);
  Tensor out;
  if (accumulate) {
    out = index_add(rows, 0, positions, value_rows);
  } else {
    Shape column(static_cast<size_t>(rows.dim()), 1);
    column[0] = count;
    out = scatter(rows, 0, positions.view(column).expand(row_sizes).contiguous(),
                  value_rows.contiguous());
  }
  return out.view(x.sizes());
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                           bool accumulate) {
  const ProfileScope profile("index_put_", {*this, values});
  autograd::check_inplace(*this, "index_put_");
  NoGradGuard no_grad;
  return copy_(index_put(*this, indices, values, accumulate));
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, double value) {
  check_defined(*this, "index_put_", "input");
  return index_put_(indices, full({}, value, options()));
}

}  // namespace minidl
