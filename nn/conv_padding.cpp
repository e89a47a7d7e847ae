#include "minidl/nn/conv_padding.h"

#include "minidl/core/error.h"

namespace minidl::nn {

namespace {

// Appends the amounts before and after one dim of `kernel` elements.
void add_dim(std::vector<int64_t>& amounts, bool same, int64_t extent, int64_t kernel,
             int64_t stride, int64_t dilation, const char* op) {
  if (!same) {
    amounts.insert(amounts.end(), {extent, extent});
    return;
  }
  MINIDL_CHECK(stride == 1, op, ": padding kSame ('same') is not supported for strided ",
               "convolutions, got stride ", stride);
  const int64_t total = dilation * (kernel - 1);
  amounts.insert(amounts.end(), {total / 2, total - total / 2});
}

}  // namespace

std::vector<int64_t> conv_pad_amounts(const Conv2dPadding& padding, Size2 kernel, Size2 stride,
                                      Size2 dilation, const char* op) {
  const bool same = padding.kind() == Conv2dPadding::Kind::Same;
  std::vector<int64_t> amounts;
  add_dim(amounts, same, padding.extent().w, kernel.w, stride.w, dilation.w, op);
  add_dim(amounts, same, padding.extent().h, kernel.h, stride.h, dilation.h, op);
  return amounts;
}

std::vector<int64_t> conv_pad_amounts(const Conv1dPadding& padding, int64_t kernel, int64_t stride,
                                      int64_t dilation, const char* op) {
  std::vector<int64_t> amounts;
  add_dim(amounts, padding.kind() == Conv1dPadding::Kind::Same, padding.extent(), kernel, stride,
          dilation, op);
  return amounts;
}

bool symmetric(const std::vector<int64_t>& amounts) {
  for (size_t i = 0; i + 1 < amounts.size(); i += 2)
    if (amounts[i] != amounts[i + 1]) return false;
  return true;
}

}  // namespace minidl::nn
