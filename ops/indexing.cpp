// gather, scatter, scatter_add and index_add: argument checks, the IndexingGeometry of
// ops/indexing_math.h, dispatch to ops/indexing_kernels.h, and the backward; and the in-place
// Tensor::scatter_ and Tensor::scatter_add_.
//
// Note [Deterministic scatter_add]
// Where an index names one element of the output several times (a histogram, a segment sum,
// index_add's repeated rows), the result is its starting value plus the sum of the
// contributions, and floating-point addition is not associative: atomics, adding in whatever
// order the threads run, would change the result's last bits from run to run. Both backends
// instead apply each element's contributions in ascending position in the index, from the
// element's starting value, accumulating in float32 for float16 and bfloat16 (rounded once) and
// in the dtype itself otherwise:
//
//   - CPU (ops/cpu/indexing.cpp): one serial pass over the index in position order;
//   - CUDA (ops/cuda/indexing.cu): the (target, position) pairs stably radix-sorted by target,
//     then one thread per run of equal targets, adding the run in order (as ops/cuda/embedding.cu
//     does for the embedding gradient).
//
// So the result is the same on every run, and the CPU and CUDA results are equal to the bit.
// scatter (assigning) uses the same sort: of several writes to one element the last position's
// wins, on both backends. The cost is the sort, and a target written by most of the index is
// applied by one thread.
//
// index_add is scatter_add with index expanded along the other dims to source's shape (so it
// shares the determinism); its error names index_add, with the index and the size.
#include "minidl/ops/indexing.h"

#include <algorithm>
#include <string>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/indexing_kernels.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

std::string gather_index_error(int64_t index, int64_t position, int64_t size) {
  return detail::concat("gather: index ", index, " at position ", position,
                        " of the index is out of range for a dimension of size ", size);
}
std::string scatter_index_error(int64_t index, int64_t position, int64_t size) {
  return detail::concat("scatter: index ", index, " at position ", position,
                        " of the index is out of range for a dimension of size ", size);
}
std::string scatter_add_index_error(int64_t index, int64_t position, int64_t size) {
  return detail::concat("scatter_add: index ", index, " at position ", position,
                        " of the index is out of range for a dimension of size ", size);
}
// The position is in the expanded index, so the message leaves it out.
std::string index_add_index_error(int64_t index, int64_t /*position*/, int64_t size) {
  return detail::concat("index_add: index ", index, " is out of range for a dimension of size ",
                        size);
}

Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// The index's checks common to gather and scatter: int64, on x's device, x's number of dims.
void check_index(const Tensor& x, const Tensor& index, const char* op) {
  check_defined(index, op, "index");
  MINIDL_CHECK(index.dtype() == kInt64, op, ": expected an int64 index, got ", index.dtype());
  MINIDL_CHECK(index.device() == x.device(), op, ": expected the index on the input's device ",
               x.device(), ", got ", index.device());
  MINIDL_CHECK(index.dim() == x.dim(), op, ": expected an index with as many dimensions as the ",
               "input (", x.dim(), "), got shape ", index.sizes(), " for an input of shape ",
               x.sizes());
  MINIDL_CHECK(x.dim() <= kMaxIndexingDims, op, ": at most ", kMaxIndexingDims,
               " dimensions, got shape ", x.sizes());
}

// index.size(d) <= bound.size(d) for every d (but `except_dim`, unless it is -1).
void check_index_fits(const Tensor& index, const Tensor& bound, int64_t except_dim,
                      const char* bound_name, const char* op) {
  for (int64_t d = 0; d < index.dim(); ++d)
    MINIDL_CHECK(d == except_dim || index.size(d) <= bound.size(d), op, ": expected index.size(", d,
                 ") <= ", bound_name, ".size(", d, "), got an index of shape ", index.sizes(),
                 " and ", bound_name, " of shape ", bound.sizes());
}

// For contiguous index, self and other of at least 1 dim.
IndexingGeometry geometry_of(const Tensor& index, const Tensor& self, const Tensor& other,
                             int64_t dim) {
  IndexingGeometry geometry;
  geometry.dims = static_cast<int>(index.dim());
  geometry.dim = static_cast<int>(dim);
  geometry.self_dim_size = self.size(dim);
  const Shape self_strides = contiguous_strides(self.sizes());
  const Shape other_strides = contiguous_strides(other.sizes());
  for (int d = 0; d < geometry.dims; ++d) {
    geometry.index_sizes[d] = index.size(d);
    geometry.self_strides[d] = self_strides[d];
    geometry.other_strides[d] = other_strides[d];
  }
  return geometry;
}

// gather without autograd.
Tensor gather_values(const Tensor& x, int64_t dim, const Tensor& index) {
  NoGradGuard no_grad;
  const Tensor self = at_least_1d(x).contiguous(), index_1d = at_least_1d(index).contiguous();
  Tensor out = empty(index.sizes(), TensorOptions(x.options()).requires_grad(false));
  if (index.numel() == 0) return out;
  kernels_for<IndexingKernels>(x.device())
      .gather(out, self, index_1d, geometry_of(index_1d, self, index_1d, dim), gather_index_error);
  return out;
}

// A copy of x with src scattered into it, without autograd.
Tensor scatter_values(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      ScatterReduction reduction, DescribeIndexError describe) {
  NoGradGuard no_grad;
  Tensor out = x.contiguous().clone();
  if (index.numel() == 0) return out;
  const Tensor out_1d = at_least_1d(out), index_1d = at_least_1d(index).contiguous(),
               src_1d = at_least_1d(src).contiguous();
  kernels_for<IndexingKernels>(x.device())
      .scatter(out_1d, src_1d, index_1d, geometry_of(index_1d, out_1d, src_1d, dim), reduction,
               describe);
  return out;
}

// The checks of scatter and scatter_add; returns the wrapped dim.
int64_t check_scatter_arguments(const Tensor& x, int64_t dim, const Tensor& index,
                                const Tensor& src, const char* op) {
  check_defined(x, op, "input");
  check_defined(src, op, "src");
  check_index(x, index, op);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(1, x.dim()), op);
  MINIDL_CHECK(src.dtype() == x.dtype(), op, ": expected src of the input's dtype ", x.dtype(),
               ", got ", src.dtype());
  MINIDL_CHECK(src.device() == x.device(), op, ": expected src on the input's device ", x.device(),
               ", got ", src.device());
  MINIDL_CHECK(src.dim() == x.dim(), op, ": expected src with as many dimensions as the input (",
               x.dim(), "), got shape ", src.sizes());
  check_index_fits(index, src, -1, "src", op);
  check_index_fits(index, x, d, "input", op);
  return d;
}

// scatter's and scatter_add's gradients as recorded ops (create_graph): for x, the gradient
// with the written places zeroed (scatter) or as it is (scatter_add); for src, the gradient
// gathered at the index, padded with zeros where src reaches beyond the index.
std::vector<Tensor> scatter_gradient_recorded(const Tensor& grad, const Tensor& index, int64_t d,
                                              bool assign, const Shape& src_sizes) {
  const Tensor grad_x =
      assign ? scatter(grad, d, index, zeros(index.sizes(), grad.options())) : grad;
  Tensor grad_src = gather(grad, d, index);
  if (grad_src.sizes() != src_sizes) {
    Shape padding;  // F.pad's order: the last dim's (before, after) first
    for (int64_t k = index.dim() - 1; k >= 0; --k)
      padding.insert(padding.end(), {0, src_sizes[static_cast<size_t>(k)] - index.size(k)});
    grad_src = pad(grad_src, padding);
  }
  return {grad_x, grad_src};
}

Tensor scatter_with(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                    ScatterReduction reduction, const char* op, DescribeIndexError describe) {
  const ProfileScope profile(op, {x, index, src});
  const int64_t d = check_scatter_arguments(x, dim, index, src, op);
  if (reduction == ScatterReduction::Add)
    MINIDL_CHECK(x.dtype() != kBool, op, ": expected a numeric tensor, got bool");
  Tensor out = scatter_values(x, d, index, src, reduction, describe);
  if (autograd::needs_grad({x, src})) {
    autograd::SavedTensor saved_index(index, op);
    const bool assign = reduction == ScatterReduction::Assign;
    const Shape& src_sizes = src.sizes();
    autograd::record(
        out, assign ? "ScatterBackward" : "ScatterAddBackward", {x, src},
        [saved_index, d, assign, src_sizes](const Tensor& grad) {
          const Tensor& index = saved_index.get();
          if (GradMode::is_enabled())
            return scatter_gradient_recorded(grad, index, d, assign, src_sizes);
          // Where scatter wrote, x's old value is gone: its gradient is zero there.
          Tensor grad_x = assign
                              ? scatter_values(grad, d, index, zeros(index.sizes(), grad.options()),
                                               ScatterReduction::Assign, scatter_index_error)
                              : grad;
          // src's elements beyond the index's extent are not read: zero gradient.
          Tensor grad_src = zeros(src_sizes, grad.options());
          const Tensor picked = gather_values(grad, d, index);
          if (picked.sizes() == src_sizes) {
            grad_src = picked;
          } else if (index.numel() > 0) {
            Tensor region = grad_src;
            for (int64_t k = 0; k < index.dim(); ++k) region = region.narrow(k, 0, index.size(k));
            region.copy_(picked);
          }
          return std::vector<Tensor>{grad_x, grad_src};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const ProfileScope profile("gather", {x, index});
  check_defined(x, "gather", "input");
  check_index(x, index, "gather");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(1, x.dim()), "gather");
  check_index_fits(index, x, d, "input", "gather");
  Tensor out = gather_values(x, d, index);
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_index(index, "gather");
    const Shape& x_sizes = x.sizes();
    autograd::record(
        out, "GatherBackward", {x},
        [saved_index, d, x_sizes](const Tensor& grad) {
          const Tensor zero = zeros(x_sizes, grad.options());
          // Under create_graph, the recorded scatter_add: differentiable again.
          if (GradMode::is_enabled())
            return std::vector<Tensor>{scatter_add(zero, d, saved_index.get(), grad)};
          return std::vector<Tensor>{scatter_values(zero, d, saved_index.get(), grad.contiguous(),
                                                    ScatterReduction::Add,
                                                    scatter_add_index_error)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_with(x, dim, index, src, ScatterReduction::Assign, "scatter", scatter_index_error);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_with(x, dim, index, src, ScatterReduction::Add, "scatter_add",
                      scatter_add_index_error);
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 double alpha) {
  check_defined(x, "index_add", "input");
  check_defined(index, "index_add", "index");
  check_defined(source, "index_add", "source");
  MINIDL_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
               "index_add: expected an int64 or int32 index, got ", index.dtype());
  MINIDL_CHECK(index.dim() <= 1, "index_add: expected a 1-D index, got shape ", index.sizes());
  MINIDL_CHECK(index.device() == x.device(), "index_add: expected the index on the input's ",
               "device ", x.device(), ", got ", index.device());
  const int64_t d = wrap_dim(dim, std::max<int64_t>(1, x.dim()), "index_add");
  const Tensor x_1d = at_least_1d(x), source_1d = at_least_1d(source);
  Shape expected = x_1d.sizes();
  expected[d] = index.numel();
  MINIDL_CHECK(source_1d.sizes() == expected, "index_add: expected source of shape ", expected,
               " (the input's ", x.sizes(), " with the index's length along dimension ", d,
               "), got ", source.sizes());
  // index [n] along d, 1 elsewhere, expanded to source's shape.
  Shape index_view(expected.size(), 1);
  index_view[d] = index.numel();
  const Tensor expanded_index = index.to(kInt64).reshape(index_view).expand(expected).contiguous();
  const Tensor scaled = alpha == 1 ? source_1d : source_1d.mul(alpha);
  Tensor out = scatter_with(x_1d, d, expanded_index, scaled, ScatterReduction::Add, "index_add",
                            index_add_index_error);
  return x.dim() == 0 ? out.reshape({}) : out;
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  autograd::check_inplace(*this, "scatter_");
  NoGradGuard no_grad;
  return copy_(minidl::scatter(*this, dim, index, src));
}

Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  autograd::check_inplace(*this, "scatter_add_");
  NoGradGuard no_grad;
  return copy_(minidl::scatter_add(*this, dim, index, src));
}

}  // namespace minidl
