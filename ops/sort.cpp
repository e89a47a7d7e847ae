// Sorting along one dim: validation, layout, dispatch to the kernels of ops/sort_kernels.h,
// and backward.
//
// The kernels see only rows: the sorted dim is swapped with the last one and the input made
// contiguous, [rows, size]; the [rows, k] results are swapped back into x's dim order. A 0-d
// tensor is sorted as one row of one element.
#include "minidl/ops/sort.h"

#include <string_view>
#include <tuple>
#include <utility>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/sort_kernels.h"

namespace minidl {

namespace {

// x (or its 1-element form for a 0-d x) with the sorted dim swapped to the end.
struct RowLayout {
  Tensor input;                          // contiguous [rows, size]
  int64_t dim = 0;                       // the sorted dim, wrapped
  int64_t last = 0;                      // the last dim of the (at least 1-d) tensor
  int64_t rows = 0;                      // the product of the other dims
  int64_t size = 0;                      // x.size(dim)
  Shape swapped_sizes;                   // x's sizes with `dim` and `last` exchanged (at least 1-d)
  Shape result_sizes(int64_t k) const {  // the result's sizes in x's dim order
    Shape sizes = swapped_sizes;
    sizes.back() = k;
    std::swap(sizes[dim], sizes[last]);
    return sizes;
  }
};

RowLayout row_layout(const Tensor& x, int64_t dim, const char* op) {
  check_defined(x, op, "input");
  const Tensor at_least_1d = x.dim() == 0 ? x.reshape({1}) : x;
  RowLayout layout;
  layout.dim = wrap_dim(dim, at_least_1d.dim(), op);
  layout.last = at_least_1d.dim() - 1;
  layout.size = at_least_1d.size(layout.dim);
  layout.rows = 1;
  for (int64_t d = 0; d < at_least_1d.dim(); ++d)
    if (d != layout.dim) layout.rows *= at_least_1d.size(d);
  const Tensor swapped = at_least_1d.transpose(layout.dim, layout.last).contiguous();
  layout.swapped_sizes = swapped.sizes();
  layout.input = swapped.view({layout.rows, layout.size});
  return layout;
}

// [rows, k] -> x's dim order (0-d when x is).
Tensor from_rows(const Tensor& rows, const RowLayout& layout, int64_t k, bool zero_dim) {
  Shape swapped = layout.swapped_sizes;
  swapped.back() = k;
  Tensor result = rows.view(swapped).transpose(layout.dim, layout.last).contiguous();
  return zero_dim ? result.reshape({}) : result;
}

// The first k elements of each row of x along `dim` in the order of Note [Sort order]
// (ops/sort_math.h), with their indices; the values' gradient is scattered back to x.
std::tuple<Tensor, Tensor> sorted_prefix(const Tensor& x, int64_t k, int64_t dim, bool descending,
                                         const char* op) {
  const ProfileScope profile(op, {x});
  RowLayout layout;
  Tensor value_rows, index_rows;
  {
    NoGradGuard no_grad;  // the layout's copies are not part of the graph
    layout = row_layout(x, dim, op);
    MINIDL_CHECK(k >= 0 && k <= layout.size, op, ": k must be in [0, ", layout.size,
                 "] (the size of dim ", layout.dim, " of a tensor of shape ", x.sizes(),
                 "), got k = ", k);
    value_rows = empty({layout.rows, k}, TensorOptions(x.options()).requires_grad(false));
    index_rows = empty({layout.rows, k}, TensorOptions(kInt64).device(x.device()));
    if (layout.rows > 0 && k > 0)
      kernels_for<SortKernels>(x.device())
          .sort_rows(value_rows, index_rows, layout.input, descending);
  }
  const bool zero_dim = x.dim() == 0;
  Tensor values = from_rows(value_rows, layout, k, zero_dim);
  Tensor indices = from_rows(index_rows, layout, k, zero_dim);
  if (autograd::needs_grad({x})) {
    // Saving the [rows, k] indices (which the caller's may alias) makes an in-place change to
    // them an error at backward, not a wrong gradient.
    autograd::SavedTensor saved_indices(index_rows, op);
    const Shape& input_sizes = x.sizes();
    const Shape swapped_sizes = layout.swapped_sizes;
    const int64_t sorted_dim = layout.dim, last = layout.last, rows = layout.rows,
                  size = layout.size;
    autograd::record(
        values, std::string_view(op) == "topk" ? "TopkBackward" : "SortBackward", {x},
        [saved_indices, input_sizes, swapped_sizes, sorted_dim, last, rows, size,
         k](const Tensor& grad) {
          Shape grad_swapped = swapped_sizes;
          grad_swapped.back() = k;
          if (GradMode::is_enabled()) {
            // create_graph: the recorded scatter_add of the gradient to where each value came
            // from, differentiable again.
            const Tensor indices =
                saved_indices.get().view(grad_swapped).transpose(sorted_dim, last);
            return std::vector<Tensor>{scatter_add(zeros(input_sizes, grad.options()), sorted_dim,
                                                   indices.reshape(grad.sizes()), grad)};
          }
          const Tensor grad_at_least_1d = grad.dim() == 0 ? grad.reshape({1}) : grad;
          const Tensor grad_rows =
              grad_at_least_1d.transpose(sorted_dim, last).contiguous().view({rows, k});
          Tensor grad_input_rows = empty({rows, size}, grad.options());
          kernels_for<SortKernels>(grad.device())
              .scatter_rows_grad(grad_input_rows, grad_rows, saved_indices.get());
          Tensor grad_input = grad_input_rows.view(swapped_sizes)
                                  .transpose(sorted_dim, last)
                                  .contiguous()
                                  .view(input_sizes);
          return std::vector<Tensor>{grad_input};
        },
        autograd::DoubleBackward::kSupported);
  }
  return {values, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  (void)stable;  // every sort is the stable one (Note [Sort order])
  check_defined(x, "sort", "input");
  const int64_t size = x.dim() == 0 ? 1 : x.size(wrap_dim(dim, x.dim(), "sort"));
  return sorted_prefix(x, size, dim, descending, "sort");
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  check_defined(x, "argsort", "input");
  NoGradGuard no_grad;  // indices only
  const int64_t size = x.dim() == 0 ? 1 : x.size(wrap_dim(dim, x.dim(), "argsort"));
  (void)stable;
  return std::get<1>(sorted_prefix(x, size, dim, descending, "argsort"));
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  (void)sorted;  // the k elements always come in order
  check_defined(x, "topk", "input");
  MINIDL_CHECK(x.dtype() != kBool, "topk: expected a numeric tensor, got bool (as PyTorch, ",
               "topk is not defined for bool; sort is)");
  return sorted_prefix(x, k, dim, /*descending=*/largest, "topk");
}

}  // namespace minidl
