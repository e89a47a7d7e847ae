// Indexing by tensors, alone or among other indices, as LibTorch's x.index({mask}),
// x.index({Slice(), indices}), index_put and index_put_. Compositions: the true positions of a
// mask come from a stable argsort (as masked_select's), rows are read with index_select and
// written with scatter (the last value of a repeated index wins) or index_add (accumulate:
// position order), so both backends, the gradients and determinism come from those ops.
#include <algorithm>
#include <string>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/broadcast.h"
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

// Checks a tensor index against the dims of `view` it picks along, from `dim`.
void check_index(const Tensor& view, int64_t dim, const Tensor& index, const char* op) {
  MINIDL_CHECK(index.dtype() == kBool || index.dtype() == kInt64, op,
               ": expected a bool mask or an int64 index tensor, got ", index.dtype());
  MINIDL_CHECK(index.device() == view.device(), op, ": expected the index on ", view.device(),
               " with the tensor, got ", index.device());
  if (index.dtype() == kInt64) return;  // apply_basic_indices checked that it has a dim
  MINIDL_CHECK(dim + index.dim() <= view.dim(), op, ": a mask of shape ", index.sizes(),
               " has more dims than the tensor of shape ", view.sizes(), " has from dim ", dim);
  const Shape indexed(view.sizes().begin() + dim, view.sizes().begin() + dim + index.dim());
  MINIDL_CHECK(index.sizes() == indexed, op, ": the shape of the mask ", index.sizes(),
               " does not match the shape ", indexed, " of the dims it indexes (tensor of shape ",
               view.sizes(), " from dim ", dim, ")");
}

// The positions along a dim of `size` that an int64 index names, negative ones counted from the
// end; or the flat positions of a mask's true elements in row-major order (one wait for the
// device on CUDA, to learn their count).
Tensor positions_of(const Tensor& index, int64_t size, int64_t source_dim, const char* op) {
  NoGradGuard no_grad;
  if (index.dtype() == kBool) {
    const Tensor flat_mask = index.reshape({-1});
    const int64_t count = sum(flat_mask).item<int64_t>();
    return argsort(flat_mask, 0, /*descending=*/true).narrow(0, 0, count);  // stable
  }
  // Checked here on the CPU, so the error names this op rather than the index_select, scatter
  // or index_add it is made of; on CUDA an out-of-range entry is made an out-of-range position
  // of the rows (see index_by_tensors), for those kernels' device-side checks to report without
  // a wait for the device.
  if (index.is_cpu()) {
    const std::vector<int64_t> values = to_vector<int64_t>(index.contiguous());
    for (size_t i = 0; i < values.size(); ++i)
      MINIDL_CHECK(values[i] >= -size && values[i] < size, op, ": index ", values[i],
                   " at position ", i, " is out of range for dimension ", source_dim, " of size ",
                   size);
  }
  return where(index < 0, index + size, index);  // int64 stays int64
}

// What index_by_tensors reads: the rows of `view` (its picked dims brought to the front and
// flattened into one), the rows' numbers to read, and how to lay the result out.
struct Picking {
  Tensor rows;       // [picked rows, the other dims of the view...]
  Tensor numbers;    // int64, of the broadcast shape of the tensor indices
  Shape other_dims;  // the sizes of the view's dims that are not picked
  // Where the broadcast dims go in the result: 0, or the first picked dim when the tensor
  // indices are next to one another.
  int64_t result_dim = 0;
};

// Note [Tensor indices among others]
// x.index({Slice(), rows, None, cols}) follows LibTorch's rules, which are NumPy's except that
// an integer selects its dim first, as a basic index: the integers, slices, None and "..."
// apply first, as views (indexing::apply_basic_indices); then the tensor indices, broadcast
// together to one shape B, pick along the dims they keep, a bool mask standing for its true
// positions over its own dims (merged into one). If the picked dims are next to one another,
// B takes their place; otherwise B comes first (x[:, i, :, j] is [B, x.size(0), x.size(2)]).
// Made of a permute that brings the picked dims to the front, a reshape into rows of the rest
// and index_select of the rows' numbers, so it runs on both backends and is differentiable.
// index_put writes x's elements through their flat positions, which the same indexing reads
// from arange(x.numel()) laid out as x.
Picking pick(const Tensor& x, const std::vector<indexing::TensorIndex>& indices, const char* op) {
  check_defined(x, op, "input");
  std::vector<indexing::TensorIndexPlace> places;
  Tensor view = indexing::apply_basic_indices(x, indices, &places);
  std::vector<int64_t> dims;         // per tensor index, the dim of `view` it picks along
  std::vector<Tensor> positions;     // per tensor index, int64, in range where checked
  std::vector<Tensor> out_of_range;  // on CUDA: per int64 index, where its entries are not
  int64_t merged = 0;                // dims that masks before this index merged away
  size_t place = 0;
  for (const indexing::TensorIndex& index : indices) {
    if (!index.is_tensor()) continue;
    const Tensor& tensor = index.tensor();
    const int64_t dim = places[place].view_dim - merged;
    const int64_t source_dim = places[place++].source_dim;
    check_index(view, dim, tensor, op);
    if (tensor.dtype() == kBool && tensor.dim() != 1) {
      // Its dims as one (a 0-d mask: a new dim of one element, taken or not).
      view = tensor.dim() == 0 ? view.unsqueeze(dim) : view.flatten(dim, dim + tensor.dim() - 1);
      merged += tensor.dim() - 1;
    }
    const int64_t size = view.size(dim);
    positions.push_back(positions_of(tensor, size, source_dim, op));
    if (tensor.dtype() == kInt64 && !tensor.is_cpu())
      out_of_range.push_back(logical_or(tensor < -size, tensor >= size));
    dims.push_back(dim);
  }

  Picking picking;
  std::vector<int64_t> order = dims;  // the picked dims first, then the others
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) continue;
    order.push_back(d);
    picking.other_dims.push_back(view.size(d));
  }
  Shape row_sizes = picking.other_dims;
  row_sizes.insert(row_sizes.begin(), -1);
  picking.rows = view.permute(order).reshape(row_sizes);
  {
    NoGradGuard no_grad;
    Shape broadcast = positions[0].sizes();
    for (const Tensor& p : positions) broadcast = broadcast_shapes(broadcast, p.sizes(), op);
    // Row-major numbers over the picked dims.
    Tensor numbers = positions[0];
    for (size_t k = 1; k < positions.size(); ++k)
      numbers = numbers * view.size(dims[k]) + positions[k];
    numbers = numbers.expand(broadcast);
    for (const Tensor& bad : out_of_range)  // a row past the end: the kernels report it
      numbers = where(bad, picking.rows.size(0), numbers);
    picking.numbers = numbers;
  }
  bool adjacent = true;
  for (size_t k = 1; k < dims.size(); ++k)
    adjacent = adjacent && dims[k] == dims[0] + static_cast<int64_t>(k);
  picking.result_dim = adjacent ? dims[0] : 0;
  return picking;
}

// The result of a picking: [B, other dims...], with B moved to result_dim.
Tensor picked(const Picking& picking) {
  const Tensor numbers = picking.numbers;
  Shape sizes = numbers.sizes();
  sizes.insert(sizes.end(), picking.other_dims.begin(), picking.other_dims.end());
  Tensor out = index_select(picking.rows, 0, numbers.reshape({-1})).reshape(sizes);
  if (picking.result_dim == 0) return out;
  const int64_t broadcast_dims = numbers.dim();
  std::vector<int64_t> order;
  for (int64_t d = 0; d < picking.result_dim; ++d) order.push_back(broadcast_dims + d);
  for (int64_t d = 0; d < broadcast_dims; ++d) order.push_back(d);
  for (int64_t d = broadcast_dims + picking.result_dim; d < out.dim(); ++d) order.push_back(d);
  return out.permute(order).contiguous();
}

}  // namespace

Tensor Tensor::index_by_tensors(const std::vector<indexing::TensorIndex>& indices) const {
  const ProfileScope profile("index", {*this});
  return picked(pick(*this, indices, "index"));
}

Tensor index_put(const Tensor& x, const std::vector<indexing::TensorIndex>& indices,
                 const Tensor& values, bool accumulate) {
  const ProfileScope profile("index_put", {x, values});
  check_defined(x, "index_put", "input");
  check_defined(values, "index_put", "values");
  MINIDL_CHECK(std::any_of(indices.begin(), indices.end(),
                           [](const indexing::TensorIndex& index) { return index.is_tensor(); }),
               "index_put: expected at least one tensor index (a bool mask or an int64 index), ",
               "got ", indexing::to_string(indices),
               "; write through the view instead: x.index(indices).copy_(values)");
  MINIDL_CHECK(values.dtype() == x.dtype() && values.device() == x.device(),
               "index_put: expected values of the tensor's dtype ", x.dtype(), " on ", x.device(),
               ", got ", values.dtype(), " on ", values.device());
  const bool alone = indices.size() == 1;
  if (alone) {
    const Tensor& index = indices[0].tensor();
    check_index(x, 0, index, "index_put");
    const Shape trailing(x.sizes().begin() + index.dim(), x.sizes().end());
    if (index.dtype() == kBool && broadcasts_to(values.sizes(), trailing)) {
      // The same values for every selected row: an element-wise select, no wait for the device.
      Shape mask_sizes = index.sizes();
      mask_sizes.resize(static_cast<size_t>(x.dim()), 1);
      const Tensor mask = index.view(mask_sizes);
      return where(mask, accumulate ? x + values : values, x);
    }
  }
  // The rows written and their numbers: x's rows for a single tensor index; otherwise x's
  // elements, by their flat positions (Note [Tensor indices among others]).
  Tensor rows, numbers;
  Shape result_sizes;
  if (alone) {
    const Picking picking = pick(x, indices, "index_put");
    rows = picking.rows;
    numbers = picking.numbers;
    result_sizes = numbers.sizes();
    result_sizes.insert(result_sizes.end(), picking.other_dims.begin(), picking.other_dims.end());
  } else {
    {
      NoGradGuard no_grad;
      const Tensor numbered = arange(x.numel(), TensorOptions(kInt64).device(x.device()));
      numbers = picked(pick(numbered.view(x.sizes()), indices, "index_put"));
    }
    rows = x.reshape({-1});
    result_sizes = numbers.sizes();
  }
  MINIDL_CHECK(broadcasts_to(values.sizes(), result_sizes), "index_put: values of shape ",
               values.sizes(), " cannot be broadcast to the indexing result's shape ",
               result_sizes);
  Shape row_sizes = rows.sizes();
  row_sizes[0] = numbers.numel();
  const Tensor value_rows = values.expand(result_sizes).reshape(row_sizes);
  const Tensor flat_numbers = numbers.reshape({-1});
  Tensor out;
  if (accumulate) {
    out = index_add(rows, 0, flat_numbers, value_rows);
  } else {
    Shape column(static_cast<size_t>(rows.dim()), 1);
    column[0] = flat_numbers.numel();
    out = scatter(rows, 0, flat_numbers.view(column).expand(row_sizes).contiguous(),
                  value_rows.contiguous());
  }
  return out.reshape(x.sizes());
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
