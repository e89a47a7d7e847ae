// masked_fill, tril and triu on top of where (ops/elementwise_comparison.cpp), which gives them
// both backends, every dtype and the backward.
#include "minidl/ops/masking.h"

#include <vector>

#include "minidl/ops/elementwise.h"

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

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  check_defined(x, op, "input");
  MINIDL_CHECK(x.dim() >= 2, op, ": expected a tensor with at least 2 dimensions, got shape ",
               x.sizes());
  return where(triangle_mask(x.size(-2), x.size(-1), diagonal, lower, x.device()), x, 0.0);
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_defined(x, "masked_fill", "input");
  check_defined(mask, "masked_fill", "mask");
  MINIDL_CHECK(mask.dtype() == kBool, "masked_fill: expected a bool mask, got ", mask.dtype(),
               " (compare it to get one: mask == 0)");
  MINIDL_CHECK(mask.device() == x.device(), "masked_fill: expected the mask on ", x.device(),
               " with the input, got ", mask.device());
  return where(mask, value, x);
}

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

}  // namespace minidl
