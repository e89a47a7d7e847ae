// Reductions: validation, layout, dispatch to the kernels of ops/reduce_kernels.h, and
// backward.
//
// Note [Reduction layout]: the kernels only ever see a contiguous input viewed as
// [outer, reduce, inner]. When the reduced dims (ignoring size-1 dims) are one run of
// neighbouring dims, a contiguous input is used as it is (no copy) with outer/inner the kept
// dims before/after the run; otherwise the kept dims are permuted to the front, the reduced
// dims to the back, and the result made contiguous ([outer, reduce, 1]). Either way the kept
// dims keep their order, so the [outer, inner] output is the result in row-major order.
// sum, mean and var do not care in which order they visit elements, so a non-contiguous input
// that is a permutation of a contiguous one (a transpose) is first viewed in memory order,
// which often makes the copy unnecessary. max, min and argmax visit elements in logical order,
// since their indices and "first of equal extremes" refer to it.
#include "minidl/ops/reduce.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/autocast_policy.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce_kernels.h"

namespace minidl {

namespace {

// Every reduction begins with reduced_dims, all_dims or one_dim, which check that `x` is
// defined before anything reads it.

// reduced[d] says whether dim d is folded. An empty `dims` means every dim, as
// torch.sum(x, dim=[]). Negative dims count from the end; a repeated dim is an error.
std::vector<bool> reduced_dims(const Tensor& x, const Shape& dims, const char* op) {
  check_defined(x, op, "input");
  const size_t ndim = static_cast<size_t>(x.dim());
  std::vector<bool> reduced(ndim, dims.empty());
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, x.dim(), op);
    if (ndim == 0) continue;  // a 0-d tensor accepts dim 0 or -1 and reduces to itself
    MINIDL_CHECK(!reduced[d], op, ": dim ", d, " appears more than once in the list of dims ",
                 dims);
    reduced[d] = true;
  }
  return reduced;
}

std::vector<bool> all_dims(const Tensor& x, const char* op) {
  check_defined(x, op, "input");
  return std::vector<bool>(x.dim(), true);
}

struct ReductionPlan {
  Tensor input;         // contiguous [outer, reduce, inner], see Note [Reduction layout]
  int64_t reduce = 1;   // elements folded into each output
  Shape result_sizes;   // the output's shape (reduced dims dropped, or 1 with keepdim)
  Shape keepdim_sizes;  // the output's shape with reduced dims kept as 1
};

// Whether a reduction may visit elements in memory order instead of logical order.
enum class VisitOrder { Logical, Any };

// x with its dims in memory order (largest stride first) when that view is contiguous and keeps
// the kept dims in their logical order (so the output order does not change); else x itself.
// `reduced` is permuted along.
Tensor memory_order_view(const Tensor& x, std::vector<bool>& reduced) {
  if (x.is_contiguous()) return x;
  Shape order(static_cast<size_t>(x.dim()));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
  Shape sizes, strides;
  std::vector<bool> permuted_reduced;
  int64_t last_kept = -1;
  for (int64_t d : order) {
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
    permuted_reduced.push_back(reduced[d]);
    if (reduced[d] || x.size(d) == 1) continue;
    if (d < last_kept) return x;
    last_kept = d;
  }
  Tensor candidate = make_view(x, sizes, strides, x.storage_offset());
  if (!candidate.is_contiguous()) return x;
  reduced = std::move(permuted_reduced);
  return candidate;
}

ReductionPlan plan_reduction(const Tensor& x, const std::vector<bool>& reduced_in_x, bool keepdim,
                             VisitOrder visit_order) {
  ReductionPlan plan;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool reduced = reduced_in_x[d];
    plan.reduce *= reduced ? x.size(d) : 1;
    plan.keepdim_sizes.push_back(reduced ? 1 : x.size(d));
    if (!reduced || keepdim) plan.result_sizes.push_back(reduced ? 1 : x.size(d));
  }
  std::vector<bool> reduced = reduced_in_x;
  const Tensor source = visit_order == VisitOrder::Any ? memory_order_view(x, reduced) : x;

  Shape kept_order, reduced_order;  // dims of `source` in the order the permuted layout uses
  int64_t outer = 1, inner = 1;
  // Whether the reduced dims, skipping size-1 dims, form one run: state 0 before the run,
  // 1 inside it, 2 after it.
  int run_state = 0;
  bool one_run = true;
  for (int64_t d = 0; d < source.dim(); ++d) {
    const int64_t size = source.size(d);
    (reduced[d] ? reduced_order : kept_order).push_back(d);
    if (size == 1) continue;
    if (reduced[d]) {
      if (run_state == 2) one_run = false;
      run_state = 1;
    } else {
      if (run_state == 1) run_state = 2;
      (run_state == 0 ? outer : inner) *= size;
    }
  }
  NoGradGuard no_grad;  // layout changes here are not part of the graph
  if (one_run) {
    Tensor contiguous = source.contiguous();
    plan.input =
        make_view(contiguous, {outer, plan.reduce, inner},
                  contiguous_strides({outer, plan.reduce, inner}), contiguous.storage_offset());
  } else {
    Shape order = kept_order;
    order.insert(order.end(), reduced_order.begin(), reduced_order.end());
    Tensor permuted = source.permute(order).contiguous();
    const int64_t kept = shape_numel(plan.result_sizes);
    plan.input = make_view(permuted, {kept, plan.reduce, 1},
                           contiguous_strides({kept, plan.reduce, 1}), permuted.storage_offset());
  }
  return plan;
}

// Empty reductions have no max, min or argmax. `dim` is the reduced dim, or none when the
// reduction covers every element.
void check_nonempty(const Tensor& x, const ReductionPlan& plan, const char* op,
                    std::optional<int64_t> dim) {
  if (!dim)
    MINIDL_CHECK(plan.reduce > 0, op, ": cannot reduce a tensor with no elements (shape ",
                 x.sizes(), "); specify a non-empty dim");
  else
    MINIDL_CHECK(plan.reduce > 0, op, ": expected a non-empty dim to reduce, but dim ", *dim,
                 " of shape ", x.sizes(), " has size 0");
}

void check_floating(const Tensor& x, const char* op) {
  MINIDL_CHECK(x.is_floating_point(), op, ": expected a floating-point tensor (float32, ",
               "float64, float16 or bfloat16), got ", x.dtype());
}

Tensor sum_impl(const Tensor& x, const std::vector<bool>& reduced, bool keepdim) {
  const ProfileScope profile("sum", {x});
  ReductionPlan plan = plan_reduction(x, reduced, keepdim, VisitOrder::Any);
  const DType out_dtype = x.is_floating_point() ? x.dtype() : kInt64;
  Tensor out = empty(plan.result_sizes, TensorOptions(out_dtype).device(x.device()));
  kernels_for<ReduceKernels>(x.device()).sum(out, plan.input);
  if (autograd::needs_grad({x})) {
    const Shape& input_sizes = x.sizes();
    const Shape& keepdim_sizes = plan.keepdim_sizes;
    autograd::record(
        out, "SumBackward", {x},
        [input_sizes, keepdim_sizes](const Tensor& grad) {
          return std::vector<Tensor>{grad.reshape(keepdim_sizes).expand(input_sizes)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor mean_impl(const Tensor& x, const std::vector<bool>& reduced, bool keepdim) {
  const ProfileScope profile("mean", {x});
  check_floating(x, "mean");
  ReductionPlan plan = plan_reduction(x, reduced, keepdim, VisitOrder::Any);
  Tensor out = empty(plan.result_sizes, x.options());
  kernels_for<ReduceKernels>(x.device()).mean(out, plan.input);
  if (autograd::needs_grad({x})) {
    const Shape& input_sizes = x.sizes();
    const Shape& keepdim_sizes = plan.keepdim_sizes;
    const double count = static_cast<double>(plan.reduce);
    autograd::record(
        out, "MeanBackward", {x},
        [input_sizes, keepdim_sizes, count](const Tensor& grad) {
          return std::vector<Tensor>{div(grad.reshape(keepdim_sizes).expand(input_sizes), count)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// max (kLargest) or min over the dims in `reduced` (all of them, or one): (values, indices),
// indices along the reduced range (the flattened index when every dim is reduced). Indices are
// computed when `want_indices` or when backward needs them; else the second tensor is
// undefined. The gradient flows to the first extreme element of each reduced run, where the
// index points: for the one-dim form that is PyTorch's max.dim backward (grad scattered to
// `indices`); for all elements PyTorch shares the gradient evenly among ties instead.
template <bool kLargest>
std::tuple<Tensor, Tensor> extreme_impl(const Tensor& x, const std::vector<bool>& reduced,
                                        bool keepdim, std::optional<int64_t> dim,
                                        bool want_indices) {
  const char* op = kLargest ? "max" : "min";
  const ProfileScope profile(op, {x});
  ReductionPlan plan = plan_reduction(x, reduced, keepdim, VisitOrder::Logical);
  check_nonempty(x, plan, op, dim);
  Tensor values = empty(plan.result_sizes, x.options());
  const bool needs_grad = autograd::needs_grad({x});
  Tensor indices = want_indices || needs_grad
                       ? empty(plan.result_sizes, TensorOptions(kInt64).device(x.device()))
                       : Tensor();
  const ReduceKernels& kernels = kernels_for<ReduceKernels>(x.device());
  (kLargest ? kernels.max : kernels.min)(values, indices, plan.input);
  if (needs_grad) {
    // One dim or all dims is always a single run, so plan.input is x's own row-major layout
    // and the scattered gradient needs no permute back. The indices may be the caller's too:
    // saving them makes a later in-place change to them an error at backward, not a wrong
    // gradient.
    const Shape& input_sizes = x.sizes();
    const Shape& layout = plan.input.sizes();
    autograd::SavedTensor saved_indices(indices, op);
    const Shape& keepdim_sizes = plan.keepdim_sizes;
    autograd::record(
        values, kLargest ? "MaxBackward" : "MinBackward", {x},
        [input_sizes, layout, keepdim_sizes, dim, saved_indices](const Tensor& grad) {
          const Tensor indices = saved_indices.get();
          if (GradMode::is_enabled()) {
            // create_graph: the same routing as recorded ops, differentiable again:
            // the gradient where an element's position along the reduced range
            // (the flattened position when every dim is reduced) is the index.
            const TensorOptions index_options = TensorOptions(kInt64).device(grad.device());
            Tensor positions;
            if (dim && !input_sizes.empty()) {
              Shape along(input_sizes.size(), 1);
              along[*dim] = input_sizes[*dim];
              positions =
                  arange(static_cast<double>(input_sizes[*dim]), index_options).reshape(along);
            } else {
              positions = arange(static_cast<double>(shape_numel(input_sizes)), index_options)
                              .reshape(input_sizes);
            }
            return std::vector<Tensor>{where(positions == indices.reshape(keepdim_sizes),
                                             grad.reshape(keepdim_sizes), 0.0)};
          }
          Tensor grad_input = empty(layout, grad.options());
          Tensor grad_rows = grad.contiguous();
          kernels_for<ReduceKernels>(grad.device())
              .scatter_extreme_grad(grad_input, grad_rows, indices);
          return std::vector<Tensor>{grad_input.view(input_sizes)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return {values, want_indices ? indices : Tensor()};
}

Tensor argmax_impl(const Tensor& x, const std::vector<bool>& reduced, bool keepdim,
                   std::optional<int64_t> dim) {
  const ProfileScope profile("argmax", {x});
  ReductionPlan plan = plan_reduction(x, reduced, keepdim, VisitOrder::Logical);
  check_nonempty(x, plan, "argmax", dim);
  Tensor indices = empty(plan.result_sizes, TensorOptions(kInt64).device(x.device()));
  kernels_for<ReduceKernels>(x.device()).max(Tensor(), indices, plan.input);
  return indices;
}

Tensor var_impl(const Tensor& x, const std::vector<bool>& reduced, int64_t correction,
                bool keepdim) {
  const ProfileScope profile("var", {x});
  check_floating(x, "var");
  ReductionPlan plan = plan_reduction(x, reduced, keepdim, VisitOrder::Any);
  Tensor out = empty(plan.result_sizes, x.options());
  kernels_for<ReduceKernels>(x.device()).var(out, plan.input, correction);
  if (autograd::needs_grad({x})) {
    // d var / d x_i = 2 (x_i - mean) / (n - correction)
    autograd::SavedTensor saved_x(x, "var");
    const Shape& keepdim_sizes = plan.keepdim_sizes;
    const double scale = 2.0 / static_cast<double>(std::max<int64_t>(plan.reduce - correction, 0));
    const std::vector<bool>& dims = reduced;
    autograd::record(
        out, "VarBackward", {x},
        [saved_x, keepdim_sizes, scale, dims](const Tensor& grad) {
          const Tensor& input = saved_x.get();
          Tensor centered = sub(input, mean_impl(input, dims, /*keepdim=*/true));
          return std::vector<Tensor>{mul(centered, grad.reshape(keepdim_sizes)) * scale};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// The dim of a single-dim reduction, wrapped, as a mask.
std::vector<bool> one_dim(const Tensor& x, int64_t dim, const char* op) {
  return reduced_dims(x, {dim}, op);
}

}  // namespace

Tensor sum(const Tensor& x) {
  if (amp::AutocastCall cast{amp::AutocastOp::Sum, {x}}) return sum(cast[0]);
  return sum_impl(x, all_dims(x, "sum"), false);
}
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  if (amp::AutocastCall cast{amp::AutocastOp::Sum, {x}}) return sum(cast[0], dims, keepdim);
  return sum_impl(x, reduced_dims(x, dims, "sum"), keepdim);
}

Tensor mean(const Tensor& x) {
  if (amp::AutocastCall cast{amp::AutocastOp::Mean, {x}}) return mean(cast[0]);
  return mean_impl(x, all_dims(x, "mean"), false);
}
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  if (amp::AutocastCall cast{amp::AutocastOp::Mean, {x}}) return mean(cast[0], dims, keepdim);
  return mean_impl(x, reduced_dims(x, dims, "mean"), keepdim);
}

Tensor max(const Tensor& x) {
  return std::get<0>(extreme_impl<true>(x, all_dims(x, "max"), false, std::nullopt, false));
}
// The single-dim reductions take the mask first: it checks x, and argument evaluation order
// would let x.dim() below run before it.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  std::vector<bool> reduced = one_dim(x, dim, "max");
  return extreme_impl<true>(x, reduced, keepdim, wrap_dim(dim, x.dim(), "max"), true);
}

Tensor min(const Tensor& x) {
  return std::get<0>(extreme_impl<false>(x, all_dims(x, "min"), false, std::nullopt, false));
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  std::vector<bool> reduced = one_dim(x, dim, "min");
  return extreme_impl<false>(x, reduced, keepdim, wrap_dim(dim, x.dim(), "min"), true);
}

Tensor argmax(const Tensor& x) {
  return argmax_impl(x, all_dims(x, "argmax"), false, std::nullopt);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  std::vector<bool> reduced = one_dim(x, dim, "argmax");
  return argmax_impl(x, reduced, keepdim, wrap_dim(dim, x.dim(), "argmax"));
}

Tensor var(const Tensor& x) {
  if (amp::AutocastCall cast{amp::AutocastOp::Var, {x}}) return var(cast[0]);
  return var_impl(x, all_dims(x, "var"), /*correction=*/1, false);
}
Tensor var(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  if (amp::AutocastCall cast{amp::AutocastOp::Var, {x}})
    return var(cast[0], dims, correction, keepdim);
  return var_impl(x, reduced_dims(x, dims, "var"), correction, keepdim);
}

}  // namespace minidl
