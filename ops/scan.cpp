// cumsum, cumprod and prod: validation, the [outer, size, inner] view around the dim, dispatch
// to ops/scan_kernels.h, and the backward.
//
// prod is the last element along the dim of cumprod, not a reduction kernel of its own: it
// takes cumprod's exact gradient with zeros (Note [Cumprod gradient with zeros] in
// ops/scan_math.h) for the cost of a full-size temporary.
#include "minidl/ops/scan.h"

#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/saved_tensor.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/around_dim.h"
#include "minidl/ops/scan_kernels.h"

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

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  const ProfileScope profile("cumsum", {x});
  const int64_t d = scan_dim(x, dim, "cumsum");
  Tensor out;
  AroundDim lines;
  {
    NoGradGuard no_grad;
    const Tensor input = scan_input(x, "cumsum");
    lines = around_dim(input.sizes(), d);
    out = cumsum_of(input, lines, /*reverse=*/false);
  }
  if (autograd::needs_grad({x})) {
    autograd::record(out, "CumsumBackward", {x}, [lines](const Tensor& grad) {
      return std::vector<Tensor>{cumsum_of(grad.contiguous(), lines, /*reverse=*/true)};
    });
  }
  return out;
}

Tensor cumprod(const Tensor& x, int64_t dim) {
  const ProfileScope profile("cumprod", {x});
  const int64_t d = scan_dim(x, dim, "cumprod");
  Tensor input, out;
  AroundDim lines;
  {
    NoGradGuard no_grad;
    input = scan_input(x, "cumprod");
    lines = around_dim(input.sizes(), d);
    out = empty(input.sizes(), TensorOptions(input.options()).requires_grad(false));
    kernels_for<ScanKernels>(input.device())
        .cumprod(out, input, lines.outer, lines.size, lines.inner);
  }
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_input(input, "cumprod");
    autograd::record(out, "CumprodBackward", {x}, [saved_input, lines](const Tensor& grad) {
      const Tensor& input = saved_input.get();
      Tensor grad_input = empty(input.sizes(), grad.options());
      kernels_for<ScanKernels>(grad.device())
          .cumprod_backward(grad_input, grad.contiguous(), input, lines.outer, lines.size,
                            lines.inner);
      return std::vector<Tensor>{grad_input};
    });
  }
  return out;
}

Tensor prod(const Tensor& x, int64_t dim, bool keepdim) {
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
  Tensor last = cumprod(x, d).narrow(d, size - 1, 1);
  return (keepdim ? last : last.squeeze(d)).contiguous();
}

Tensor prod(const Tensor& x) {
  check_defined(x, "prod", "input");
  return prod(x.reshape({-1}), 0);
}

}  // namespace minidl
