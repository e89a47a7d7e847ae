// cumsum, cumprod and prod: validation, the [outer, size, inner] view around the dim, dispatch
// to ops/scan_kernels.h, and the backward, differentiable again (create_graph): cumsum's
// gradient is a reverse cumsum, cumprod's a kernel (Note [Cumprod gradient with zeros] in
// ops/scan_math.h) or, under create_graph, a polynomial of recorded ops.
//
// prod is the last element along the dim of cumprod; its gradient is grad times the products
// before and after each element (two cumprods), exact with zeros and recorded ops throughout.
#include "minidl/ops/scan.h"

#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/around_dim.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/masking.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/scan_kernels.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

// x as the scans take it: contiguous, floating dtypes kept, integers and bool as int64 (as
// PyTorch's cumsum, cumprod and prod promote them).
Tensor scan_input(const Tensor& x, const char* op) {
  check_defined(x, op, "input");
  const Tensor promoted = is_floating_point(x.dtype()) ? x : x.to(kInt64);
  return promoted.contiguous();
}

// The dim wrapped into x's range; a 0-d tensor takes 0 and -1, as PyTorch.
int64_t scan_dim(const Tensor& x, int64_t dim, const char* op) {
  check_defined(x, op, "input");
  return wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
}

Tensor cumsum_of(const Tensor& input, const AroundDim& lines, bool reverse) {
  Tensor out = empty(input.sizes(), TensorOptions(input.options()).requires_grad(false));
  kernels_for<ScanKernels>(input.device())
      .cumsum(out, input, lines.outer, lines.size, lines.inner, reverse);
  return out;
}

// The running sum of x along dim d, from the front or (`reverse`, cumsum's gradient) from the
// back. The gradient of one is the other, recorded the same way, so cumsum's derivatives of any
// order are scans.
Tensor scan_sum(const Tensor& x, int64_t d, bool reverse) {
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor input = scan_input(x, "cumsum");
    out = cumsum_of(input, around_dim(input.sizes(), d), reverse);
  }
  if (autograd::needs_grad({x})) {
    autograd::record(
        out, reverse ? "ReverseCumsumBackward" : "CumsumBackward", {x},
        [d, reverse](const Tensor& grad) {
          return std::vector<Tensor>{scan_sum(grad, d, !reverse)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

// The products of the elements before each one along dim d (1 for the first): x's cumprod
// shifted by one. Recorded.
Tensor exclusive_cumprod(const Tensor& x, int64_t d) {
  const int64_t size = x.size(d);
  Shape first = x.sizes();
  first[static_cast<size_t>(d)] = 1;
  return cat({ones(first, x.options()), cumprod(x, d).narrow(d, 0, size - 1)}, d);
}

// cumprod's gradient as recorded ops, for create_graph: grad_x[k] = sum over j >= k of
// grad[j] times the product of x[i] over i <= j, i != k, written without dividing by x (which
// may be 0) as front[k] * back[k] with front[k] = x[0] ... x[k-1] and back[k] = the sum over
// j >= k of grad[j] x[k+1] ... x[j], the latter from an n x n matrix per line (n the dim's
// size): row k holds 1 up to k and x after it, whose cumprod is x[k+1] ... x[j] at column j.
// So it is a polynomial in x, exact with zeros and differentiable again, with no look at the
// values from the host, for O(n^2) memory (PyTorch's takes O(n^2) time where x holds zeros,
// after reading from the device whether it does).
Tensor cumprod_gradient_recorded(const Tensor& grad, const Tensor& x, int64_t d) {
  if (x.dim() == 0 || x.size(d) <= 1) return grad;
  const int64_t n = x.size(d);
  const Tensor x_last = x.transpose(d, -1);  // [..., n]
  Shape square = x_last.sizes();
  square.insert(square.end() - 1, n);  // [..., n (k), n (i)]
  const TensorOptions mask_options = TensorOptions(kBool).device(x.device());
  const Tensor after_k = triu(ones({n, n}, mask_options), 1);  // i > k
  const Tensor from_k = triu(ones({n, n}, mask_options), 0);   // j >= k
  const Tensor rows = where(after_k, x_last.unsqueeze(-2).expand(square), 1.0);
  const Tensor products = cumprod(rows, -1);  // [k, j]: x[k+1] ... x[j] for j >= k
  const Tensor grad_last = grad.transpose(d, -1).unsqueeze(-2);
  const Tensor back = sum(where(from_k, grad_last * products, 0.0), {-1});
  return (exclusive_cumprod(x_last, x_last.dim() - 1) * back).transpose(d, -1);
}

// prod's gradient, grad times the product of the other elements, as the products before and
// after each element: exact with zeros, and (recorded under create_graph) differentiable again.
Tensor prod_gradient(const Tensor& grad, const Tensor& x, int64_t d) {
  const Tensor before = exclusive_cumprod(x, d);
  const Tensor after = flip(exclusive_cumprod(flip(x, {d}), d), {d});
  return grad * before * after;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  const ProfileScope profile("cumsum", {x});
  return scan_sum(x, scan_dim(x, dim, "cumsum"), /*reverse=*/false);
}

Tensor cumprod(const Tensor& x, int64_t dim) {
  const ProfileScope profile("cumprod", {x});
  const int64_t d = scan_dim(x, dim, "cumprod");
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor input = scan_input(x, "cumprod");
    const AroundDim lines = around_dim(input.sizes(), d);
    out = empty(input.sizes(), TensorOptions(input.options()).requires_grad(false));
    kernels_for<ScanKernels>(input.device())
        .cumprod(out, input, lines.outer, lines.size, lines.inner);
  }
  if (autograd::needs_grad({x})) {
    // x itself, not the contiguous copy: under create_graph it comes back with its graph.
    autograd::SavedTensor saved_x(x, "cumprod");
    autograd::record(
        out, "CumprodBackward", {x},
        [saved_x, d](const Tensor& grad) {
          const Tensor& x = saved_x.get();
          if (GradMode::is_enabled())
            return std::vector<Tensor>{cumprod_gradient_recorded(grad, x, d)};
          const Tensor input = x.contiguous();
          const AroundDim lines = around_dim(input.sizes(), d);
          Tensor grad_input = empty(input.sizes(), grad.options());
          kernels_for<ScanKernels>(grad.device())
              .cumprod_backward(grad_input, grad.contiguous(), input, lines.outer, lines.size,
                                lines.inner);
          return std::vector<Tensor>{grad_input};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor prod(const Tensor& x, int64_t dim, bool keepdim) {
  const ProfileScope profile("prod", {x});
  check_defined(x, "prod", "input");
  const int64_t d = scan_dim(x, dim, "prod");
  if (x.dim() == 0) return cumprod(x, d);
  const int64_t size = x.size(d);
  if (size == 0) {  // the empty product
    Shape sizes = x.sizes();
    sizes[d] = 1;
    const DType dtype = is_floating_point(x.dtype()) ? x.dtype() : kInt64;
    Tensor ones_out = ones(sizes, TensorOptions(dtype).device(x.device()));
    return keepdim ? ones_out : ones_out.squeeze(d);
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor last = cumprod(x, d).narrow(d, size - 1, 1);
    out = (keepdim ? last : last.squeeze(d)).contiguous();
  }
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_x(x, "prod");
    autograd::record(
        out, "ProdBackward", {x},
        [saved_x, d, keepdim](const Tensor& grad) {
          return std::vector<Tensor>{
              prod_gradient(keepdim ? grad : grad.unsqueeze(d), saved_x.get(), d)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor prod(const Tensor& x) {
  const ProfileScope profile("prod", {x});  // the call below is part of it: one span
  check_defined(x, "prod", "input");
  return prod(x.reshape({-1}), 0);
}

}  // namespace minidl
