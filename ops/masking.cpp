// masked_fill, tril and triu on top of where (ops/elementwise_comparison.cpp), which gives them
// both backends, every dtype and the backward. masked_select on top of argsort and
// index_select: a stable descending argsort of the flat mask lists the true positions first, in
// ascending order (Note [Sort order] in ops/sort_math.h), and index_select takes those elements
// of x, its backward scattering the gradient back to them.
#include "minidl/ops/masking.h"

#include <vector>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"

namespace minidl {

namespace {

// The bool [rows, cols] mask of the elements a triangle keeps, on `device`.
Tensor triangle_mask(int64_t rows, int64_t cols, int64_t diagonal, bool lower, Device device) {
  std::vector<uint8_t> keep(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      keep[static_cast<size_t>(i * cols + j)] = lower ? j - i <= diagonal : j - i >= diagonal;
  return from_host(keep.data(), {rows, cols}, kBool).to(device);
}

// masked_fill's value as a 0-dimensional tensor of x's dtype: the result keeps x's dtype, as
// PyTorch's (a double value does not make an integer tensor float32 here).
Tensor fill_value(const Tensor& x, double value) {
  return full({}, value, TensorOptions(x.dtype()).device(x.device()));
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  const ProfileScope profile(op, {x});
  check_defined(x, op, "input");
  MINIDL_CHECK(x.dim() >= 2, op, ": expected a tensor with at least 2 dimensions, got shape ",
               x.sizes());
  // A 0-dimensional zero of x's own dtype, so that the result keeps it (bool and int too).
  const Tensor zero = zeros({}, TensorOptions(x.dtype()).device(x.device()));
  return where(triangle_mask(x.size(-2), x.size(-1), diagonal, lower, x.device()), x, zero);
}

void check_mask(const Tensor& x, const Tensor& mask, const char* op) {
  check_defined(x, op, "input");
  check_defined(mask, op, "mask");
  MINIDL_CHECK(mask.dtype() == kBool, op, ": expected a bool mask, got ", mask.dtype(),
               " (compare it to get one: mask == 0)");
  MINIDL_CHECK(mask.device() == x.device(), op, ": expected the mask on ", x.device(),
               " with the input, got ", mask.device());
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  const ProfileScope profile("masked_fill", {x, mask});
  check_mask(x, mask, "masked_fill");
  // The mask and x broadcast together, as torch.masked_fill's (checked here, so that the error
  // names masked_fill rather than the where below).
  broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill");
  return where(mask, fill_value(x, value), x);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const ProfileScope profile("masked_select", {x, mask});
  check_mask(x, mask, "masked_select");
  const Shape sizes = broadcast_shapes(x.sizes(), mask.sizes(), "masked_select");
  const Tensor flat_x = x.expand(sizes).reshape({-1});
  Tensor positions;
  {
    NoGradGuard no_grad;
    const Tensor flat_mask = mask.expand(sizes).reshape({-1});
    // The one wait for the device: the result's length.
    const int64_t count = sum(flat_mask).item<int64_t>();
    positions = argsort(flat_mask, 0, /*descending=*/true).narrow(0, 0, count);
  }
  return index_select(flat_x, 0, positions);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
  const ProfileScope profile("masked_fill_", {*this, mask});
  check_mask(*this, mask, "masked_fill_");
  autograd::check_inplace(*this, "masked_fill_");
  MINIDL_CHECK(broadcast_shapes(sizes(), mask.sizes(), "masked_fill_") == sizes(),
               "masked_fill_: expected a mask that broadcasts to the tensor's shape ", sizes(),
               ", got ", mask.sizes());
  NoGradGuard no_grad;
  return copy_(where(mask, fill_value(*this, value), *this));
}

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

}  // namespace minidl
