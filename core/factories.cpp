#include "minidl/core/factories.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

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

Tensor arange(Scalar start_scalar, Scalar end_scalar, Scalar step_scalar, TensorOptions options) {
  const double start = start_scalar.to_double(), end = end_scalar.to_double(),
               step = step_scalar.to_double();
  MINIDL_CHECK(step != 0, "arange: step must be non-zero");
  MINIDL_CHECK((end - start) / step >= 0, "arange: the range [", start, ", ", end,
               ") is not reachable with step ", step);
  // torch.arange's dtype inference: any floating-point argument gives the default dtype.
  const bool any_floating = start_scalar.is_floating_point() || end_scalar.is_floating_point() ||
                            step_scalar.is_floating_point();
  const DType dtype = options.has_dtype() ? options.dtype() : (any_floating ? kFloat32 : kInt64);
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  Tensor as_double = from_host(values.data(), {n}, kFloat64);
  return with_requires_grad(as_double.to(options.device(), dtype), options);
}

Tensor arange(Scalar end, TensorOptions options) { return arange(0, end, 1, options); }

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
  const std::vector<double> data(values);
  return detail::tensor_from<double>(data, {static_cast<int64_t>(data.size())}, options);
}

namespace detail {

void check_nested_length(int64_t expected, size_t found, size_t dim) {
  MINIDL_CHECK(static_cast<int64_t>(found) == expected, "tensor: expected a list of length ",
               expected, " at dim ", dim, " (as the first list there), got one of length ", found,
               ": the lists of a nested list must not be ragged");
}

Tensor tensor_from_values(const void* values, DType stored, const Shape& sizes, DType inferred,
                          TensorOptions options) {
  const DType dtype = options.has_dtype() ? options.dtype() : inferred;
  Tensor host = from_host(values, sizes, stored);
  return with_requires_grad(host.to(options.device(), dtype), options);
}

}  // namespace detail

Tensor scalar_tensor(double value, TensorOptions options) {
  Tensor as_double = from_host(&value, {}, kFloat64);
  return with_requires_grad(as_double.to(options.device(), options.dtype()), options);
}

namespace {

// The arithmetic PyTorch's CPU range kernels compute a dtype's values in.
template <class T>
using RangeCompute = std::conditional_t<std::is_same_v<T, double>, double,
                                        std::conditional_t<std::is_integral_v<T>, double, float>>;

void check_steps(int64_t steps, const char* op) {
  MINIDL_CHECK(steps >= 0, op, ": number of steps must be non-negative, got ", steps);
}

// Element i of linspace(start, end, steps) in Compute (see core/factories.h).
template <class Compute>
Compute linspace_element(Compute start, Compute end, Compute step, int64_t i, int64_t steps) {
  if (i < steps / 2) return std::fma(step, static_cast<Compute>(i), start);
  return std::fma(-step, static_cast<Compute>(steps - 1 - i), end);
}

// The values of a range factory of `steps` elements in dtype T: value(T{}, i) computed in
// RangeCompute<T> from start and end first converted to T, as PyTorch converts its scalars;
// copied to options' device.
template <class Fn>
Tensor range_from_host(int64_t steps, const TensorOptions& options, const Fn& value) {
  Tensor host = empty({steps}, TensorOptions(options.dtype()));
  visit_dtype(options.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* data = static_cast<T*>(host.data_ptr());
    for (int64_t i = 0; i < steps; ++i) {
      const auto v = value(zero, i);
      if constexpr (std::is_same_v<T, bool>)
        data[i] = v != 0;
      else
        data[i] = static_cast<T>(v);
    }
  });
  Tensor result = options.device().is_cpu() ? host : host.to(options.device());
  return with_requires_grad(result, options);
}

// `scalar` converted to T, then to T's range arithmetic.
template <class T>
RangeCompute<T> as_range_value(double scalar) {
  if constexpr (std::is_same_v<T, bool>)
    return scalar != 0 ? 1 : 0;
  else
    return static_cast<RangeCompute<T>>(static_cast<T>(scalar));
}

}  // namespace

Tensor linspace(double start, double end, int64_t steps, TensorOptions options) {
  check_steps(steps, "linspace");
  return range_from_host(steps, options, [&](auto zero, int64_t i) {
    using T = decltype(zero);
    using Compute = RangeCompute<T>;
    const Compute first = as_range_value<T>(start), last = as_range_value<T>(end);
    if (steps == 1) return first;
    const Compute step = (last - first) / static_cast<Compute>(steps - 1);
    return linspace_element(first, last, step, i, steps);
  });
}

Tensor logspace(double start, double end, int64_t steps, double base, TensorOptions options) {
  check_steps(steps, "logspace");
  // As PyTorch's logspace (RangeFactories.cpp): the step and the exponent in double, from start
  // and end in the dtype; the counter counts in the dtype's arithmetic (float for 16-bit ones).
  return range_from_host(steps, options, [&](auto zero, int64_t i) {
    using T = decltype(zero);
    using Counter = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const auto first = static_cast<Counter>(as_range_value<T>(start));
    const auto last = static_cast<Counter>(as_range_value<T>(end));
    if (steps == 1) return std::pow(base, static_cast<double>(first));
    const double step = static_cast<double>(last - first) / static_cast<double>(steps - 1);
    const auto counter = static_cast<Counter>(i);
    if (i < steps / 2) {
      const double offset = step * static_cast<double>(counter);  // two roundings, no FMA
      return std::pow(base, static_cast<double>(first) + offset);
    }
    const Counter remaining = static_cast<Counter>(steps) - counter - Counter{1};
    const double offset = step * static_cast<double>(remaining);
    return std::pow(base, static_cast<double>(last) - offset);
  });
}

Tensor eye(int64_t n, int64_t m, TensorOptions options) {
  MINIDL_CHECK(n >= 0, "eye: n must be non-negative, got ", n);
  if (m == -1) m = n;
  MINIDL_CHECK(m >= 0, "eye: m must be non-negative, got ", m);
  Tensor result = zeros({n, m}, TensorOptions(options).requires_grad(false));
  const int64_t diagonal = std::min(n, m);
  if (diagonal > 0) {
    // The diagonal is a strided view with stride m + 1.
    Tensor on_diagonal = make_view(result, {diagonal}, {m + 1}, 0);
    on_diagonal.fill_(1);
  }
  return with_requires_grad(result, options);
}

}  // namespace minidl
