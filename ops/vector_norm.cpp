// The vector p-norm (ops/reduce.h's norm, torch.linalg.vector_norm) from the reductions and
// element-wise ops, so both backends come with it, and one backward node with PyTorch's
// gradient, written out so that it is 0 where the norm is (autograd through sqrt would give
// NaN there: d sqrt(s) / ds is infinite at s = 0). The gradient is itself made of recorded ops,
// so it is differentiable again (create_graph) wherever the norm is not 0.
#include <cmath>
#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"

namespace minidl {

namespace {

// The result's sizes with keepdim (1 in each reduced dim) and without; checks the dims.
struct NormSizes {
  Shape keepdim_sizes;
  Shape out_sizes;
};

NormSizes norm_sizes(const Tensor& x, const Shape& dims) {
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), dims.empty());
  for (int64_t dim : dims) {
    const auto wrapped = static_cast<size_t>(wrap_dim(dim, x.dim(), "norm"));
    MINIDL_CHECK(!reduced[wrapped], "norm: dim ", dim, " appears more than once in ", dims);
    reduced[wrapped] = true;
  }
  NormSizes sizes;
  for (int64_t d = 0; d < x.dim(); ++d) {
    sizes.keepdim_sizes.push_back(reduced[static_cast<size_t>(d)] ? 1 : x.size(d));
    if (!reduced[static_cast<size_t>(d)]) sizes.out_sizes.push_back(x.size(d));
  }
  return sizes;
}

// The norm with keepdim, of `wide` (float32 or float64).
Tensor norm_value(const Tensor& wide, double p, const Shape& dims) {
  if (p == 0) return sum(ne(wide, 0.0).to(wide.dtype()), dims, true);
  if (p == 1) return sum(abs(wide), dims, true);
  if (p == 2) return sqrt(sum(wide * wide, dims, true));
  if (p == INFINITY) return amax(abs(wide), dims, true);
  if (p == -INFINITY) return amin(abs(wide), dims, true);
  return pow(sum(pow(abs(wide), p), dims, true), 1.0 / p);
}

// d norm / d x times grad (both with keepdim sizes), by PyTorch's norm backward: zero where
// the norm is zero, the extremes sharing evenly for the infinity norms.
Tensor norm_gradient(const Tensor& grad, const Tensor& wide, const Tensor& value, double p,
                     const Shape& dims) {
  if (p == 0) return zeros_like(wide);
  if (p == 1) return grad * sign(wide);
  if (p == 2) return where(value == 0.0, 0.0, grad * wide / value);
  if (std::isinf(p)) {
    const Tensor extreme = (abs(wide) == value).to(wide.dtype());
    return grad * sign(wide) * extreme / sum(extreme, dims, true);
  }
  // x |x|^(p-2) / norm^(p-1); x |x|^(p-2) is taken as 0 at x = 0 (infinite there for p < 2).
  const Tensor scaled = where(wide == 0.0, 0.0, wide * pow(abs(wide), p - 2));
  return where(value == 0.0, 0.0, grad * scaled / pow(value, p - 1));
}

}  // namespace

Tensor norm(const Tensor& x, double p, const Shape& dims, bool keepdim) {
  const ProfileScope profile("norm", {x});
  check_defined(x, "norm", "input");
  MINIDL_CHECK(is_floating_point(x.dtype()), "norm: expected a floating-point tensor, got ",
               x.dtype());
  MINIDL_CHECK(p >= 0 || p == -INFINITY, "norm: expected p >= 0, INFINITY or -INFINITY, got ", p);
  const NormSizes sizes = norm_sizes(x, dims);
  const bool widen = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
  Tensor wide, value, out;
  {
    NoGradGuard no_grad;
    wide = widen ? x.to(kFloat32) : x;
    value = norm_value(wide, p, dims);
    out = value.reshape(keepdim ? sizes.keepdim_sizes : sizes.out_sizes).to(x.dtype());
  }
  if (autograd::needs_grad({x})) {
    // x itself rather than its float32 copy: under create_graph it comes back with its graph,
    // and the norm is recomputed from it as recorded ops, so the gradient is differentiable.
    autograd::SavedTensor saved_x(x, "norm");
    const Shape keepdim_sizes = sizes.keepdim_sizes;
    const DType dtype = x.dtype();
    autograd::record(
        out, "NormBackward", {x},
        [saved_x, value, p, dims, keepdim_sizes, dtype, widen](const Tensor& grad) {
          const Tensor& x = saved_x.get();
          const Tensor wide = widen ? x.to(kFloat32) : x;
          const Tensor norm = GradMode::is_enabled() ? norm_value(wide, p, dims) : value;
          const Tensor grad_kept = grad.reshape(keepdim_sizes).to(wide.dtype());
          return std::vector<Tensor>{norm_gradient(grad_kept, wide, norm, p, dims).to(dtype)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

}  // namespace minidl
