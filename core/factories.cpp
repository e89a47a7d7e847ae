#include <cmath>
#include <cstring>

#include "minidl/core/tensor.h"

namespace minidl {

namespace {
void check_sizes(const Shape& sizes, const char* op) {
  for (int64_t s : sizes) MINIDL_CHECK(s >= 0, op, ": sizes must be non-negative, got ", sizes);
}

Tensor with_requires_grad(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}
}  // namespace

Tensor empty_strided(const Shape& sizes, const Shape& strides, TensorOptions options) {
  check_sizes(sizes, "empty_strided");
  MINIDL_CHECK(sizes.size() == strides.size(), "empty_strided: got ", sizes.size(), " sizes and ",
               strides.size(), " strides");
  MINIDL_CHECK(options.device().is_cpu() || options.dtype() != kFloat64,
               "float64 tensors are supported on the CPU only (for gradient checks), not on ",
               options.device());
  int64_t span = 1;  // elements from the first to one past the last
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0)
      span = 0;
    else if (span != 0)
      span += (sizes[i] - 1) * strides[i];
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
      allocate_storage(static_cast<size_t>(span) * element_size(options.dtype()), options.device());
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = options.dtype();
  return with_requires_grad(Tensor(std::move(impl)), options);
}

Tensor empty(const Shape& sizes, TensorOptions options) {
  check_sizes(sizes, "empty");
  return empty_strided(sizes, contiguous_strides(sizes), options);
}

Tensor empty(const Shape& sizes, TensorOptions options, MemoryFormat format) {
  check_sizes(sizes, "empty");
  return empty_strided(sizes, strides_for(sizes, format), options);
}

Tensor full(const Shape& sizes, double value, TensorOptions options) {
  Tensor t = empty(sizes, TensorOptions(options).requires_grad(false));
  t.fill_(value);
  return with_requires_grad(t, options);
}

Tensor zeros(const Shape& sizes, TensorOptions options) { return full(sizes, 0, options); }
Tensor ones(const Shape& sizes, TensorOptions options) { return full(sizes, 1, options); }
Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), t.options()); }
Tensor full_like(const Tensor& t, double value) { return full(t.sizes(), value, t.options()); }

Tensor from_host(const void* data, const Shape& sizes, TensorOptions options) {
  Tensor host = empty(sizes, TensorOptions(options.dtype()));
  if (host.nbytes() > 0) std::memcpy(host.data_ptr(), data, host.nbytes());
  Tensor result = options.device().is_cpu() ? host : host.to(options.device());
  return with_requires_grad(result, options);
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  MINIDL_CHECK(step != 0, "arange: step must be non-zero");
  MINIDL_CHECK((end - start) / step >= 0, "arange: the range [", start, ", ", end,
               ") is not reachable with step ", step);
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  Tensor as_double = from_host(values.data(), {n}, kFloat64);
  return with_requires_grad(as_double.to(options.device(), options.dtype()), options);
}

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& sizes) {
  const Shape shape = sizes.empty() ? Shape{static_cast<int64_t>(values.size())} : sizes;
  MINIDL_CHECK(shape_numel(shape) == static_cast<int64_t>(values.size()), "tensor: ", values.size(),
               " values do not fill shape ", shape);
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_host(bytes.data(), shape, kBool);
  } else {
    return from_host(values.data(), shape, dtype_of_v<T>);
  }
}
template Tensor tensor(const std::vector<float>&, const Shape&);
template Tensor tensor(const std::vector<double>&, const Shape&);
template Tensor tensor(const std::vector<int32_t>&, const Shape&);
template Tensor tensor(const std::vector<int64_t>&, const Shape&);
template Tensor tensor(const std::vector<uint8_t>&, const Shape&);
template Tensor tensor(const std::vector<bool>&, const Shape&);

Tensor tensor(std::initializer_list<double> values, TensorOptions options) {
  std::vector<double> data(values);
  Tensor as_double = from_host(data.data(), {static_cast<int64_t>(data.size())}, kFloat64);
  return with_requires_grad(as_double.to(options.device(), options.dtype()), options);
}

Tensor scalar_tensor(double value, TensorOptions options) {
  Tensor as_double = from_host(&value, {}, kFloat64);
  return with_requires_grad(as_double.to(options.device(), options.dtype()), options);
}

}  // namespace minidl
