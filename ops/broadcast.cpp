#include "minidl/ops/broadcast.h"

#include "minidl/ops/reduce.h"

namespace minidl {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t ndim = std::max(a.size(), b.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t sa = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    const int64_t sb = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    MINIDL_CHECK(sa == sb || sa == 1 || sb == 1, op, ": shapes ", a, " and ", b,
                 " cannot be broadcast together (dimension ", i, ": ", sa, " vs ", sb, ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& sizes) {
  const size_t lead = sizes.size() - static_cast<size_t>(t.dim());
  Shape strides(sizes.size(), 0);
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i)
    strides[lead + i] =
        t.size(static_cast<int64_t>(i)) == 1 ? 0 : t.stride(static_cast<int64_t>(i));
  return strides;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  const size_t lead = grad.sizes().size() - shape.size();
  Shape dims;
  for (size_t i = 0; i < grad.sizes().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && grad.sizes()[i] != 1))
      dims.push_back(static_cast<int64_t>(i));
  Tensor summed = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return summed.reshape(shape);
}

}  // namespace minidl
