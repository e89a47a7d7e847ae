// Tensor's math methods: each forwards to the free function of the same name.
#include "minidl/ops/closeness.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/masking.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/scan.h"
#include "minidl/ops/shape.h"
#include "minidl/ops/sort.h"

namespace minidl {

Tensor Tensor::neg() const { return minidl::neg(*this); }
Tensor Tensor::exp() const { return minidl::exp(*this); }
Tensor Tensor::log() const { return minidl::log(*this); }
Tensor Tensor::sqrt() const { return minidl::sqrt(*this); }
Tensor Tensor::abs() const { return minidl::abs(*this); }
Tensor Tensor::relu() const { return minidl::relu(*this); }
Tensor Tensor::sigmoid() const { return minidl::sigmoid(*this); }
Tensor Tensor::tanh() const { return minidl::tanh(*this); }
Tensor Tensor::sin() const { return minidl::sin(*this); }
Tensor Tensor::cos() const { return minidl::cos(*this); }
Tensor Tensor::tan() const { return minidl::tan(*this); }
Tensor Tensor::asin() const { return minidl::asin(*this); }
Tensor Tensor::acos() const { return minidl::acos(*this); }
Tensor Tensor::atan() const { return minidl::atan(*this); }
Tensor Tensor::sinh() const { return minidl::sinh(*this); }
Tensor Tensor::cosh() const { return minidl::cosh(*this); }
Tensor Tensor::exp2() const { return minidl::exp2(*this); }
Tensor Tensor::expm1() const { return minidl::expm1(*this); }
Tensor Tensor::log1p() const { return minidl::log1p(*this); }
Tensor Tensor::log2() const { return minidl::log2(*this); }
Tensor Tensor::log10() const { return minidl::log10(*this); }
Tensor Tensor::erf() const { return minidl::erf(*this); }
Tensor Tensor::erfc() const { return minidl::erfc(*this); }
Tensor Tensor::floor() const { return minidl::floor(*this); }
Tensor Tensor::ceil() const { return minidl::ceil(*this); }
Tensor Tensor::trunc() const { return minidl::trunc(*this); }
Tensor Tensor::round() const { return minidl::round(*this); }
Tensor Tensor::frac() const { return minidl::frac(*this); }
Tensor Tensor::sign() const { return minidl::sign(*this); }
Tensor Tensor::rsqrt() const { return minidl::rsqrt(*this); }
Tensor Tensor::reciprocal() const { return minidl::reciprocal(*this); }
Tensor Tensor::square() const { return minidl::square(*this); }
Tensor Tensor::pow(Scalar exponent) const { return minidl::pow(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return minidl::clamp(*this, min, max);
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  return minidl::clamp(*this, min, max);
}
Tensor Tensor::clamp_min(Scalar min) const { return minidl::clamp_min(*this, min); }
Tensor Tensor::clamp_min(const Tensor& min) const { return minidl::clamp_min(*this, min); }
Tensor Tensor::clamp_max(Scalar max) const { return minidl::clamp_max(*this, max); }
Tensor Tensor::clamp_max(const Tensor& max) const { return minidl::clamp_max(*this, max); }
Tensor Tensor::add(const Tensor& other, double alpha) const {
  return minidl::add(*this, other, alpha);
}
Tensor Tensor::sub(const Tensor& other, double alpha) const {
  return minidl::sub(*this, other, alpha);
}
Tensor Tensor::mul(const Tensor& other) const { return minidl::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return minidl::div(*this, other); }
Tensor Tensor::add(Scalar other) const { return minidl::add(*this, other); }
Tensor Tensor::sub(Scalar other) const { return minidl::sub(*this, other); }
Tensor Tensor::mul(Scalar other) const { return minidl::mul(*this, other); }
Tensor Tensor::div(Scalar other) const { return minidl::div(*this, other); }
Tensor Tensor::atan2(const Tensor& other) const { return minidl::atan2(*this, other); }
Tensor Tensor::fmod(const Tensor& other) const { return minidl::fmod(*this, other); }
Tensor Tensor::fmod(Scalar other) const { return minidl::fmod(*this, other); }
Tensor Tensor::remainder(const Tensor& other) const { return minidl::remainder(*this, other); }
Tensor Tensor::remainder(Scalar other) const { return minidl::remainder(*this, other); }
Tensor Tensor::isnan() const { return minidl::isnan(*this); }
Tensor Tensor::isinf() const { return minidl::isinf(*this); }
Tensor Tensor::isfinite() const { return minidl::isfinite(*this); }
Tensor Tensor::logical_not() const { return minidl::logical_not(*this); }
Tensor Tensor::logical_and(const Tensor& other) const { return minidl::logical_and(*this, other); }
Tensor Tensor::logical_or(const Tensor& other) const { return minidl::logical_or(*this, other); }
Tensor Tensor::logical_xor(const Tensor& other) const { return minidl::logical_xor(*this, other); }
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return minidl::isclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return minidl::allclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& other) const { return minidl::equal(*this, other); }
Tensor Tensor::sum() const { return minidl::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const {
  return minidl::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return minidl::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  return minidl::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const { return minidl::max(*this); }
Tensor Tensor::min() const { return minidl::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return minidl::max(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return minidl::min(*this, dim, keepdim);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return minidl::argmax(*this, dim, keepdim);
}
Tensor Tensor::matmul(const Tensor& other) const { return minidl::matmul(*this, other); }
Tensor Tensor::softmax(int64_t dim) const { return minidl::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return minidl::log_softmax(*this, dim); }
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return minidl::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(const Shape& dims, int64_t correction, bool keepdim) const {
  return minidl::std(*this, dims, correction, keepdim);
}
Tensor Tensor::amax(const Shape& dims, bool keepdim) const {
  return minidl::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(const Shape& dims, bool keepdim) const {
  return minidl::amin(*this, dims, keepdim);
}
Tensor Tensor::logsumexp(const Shape& dims, bool keepdim) const {
  return minidl::logsumexp(*this, dims, keepdim);
}
Tensor Tensor::any(const Shape& dims, bool keepdim) const {
  return minidl::any(*this, dims, keepdim);
}
Tensor Tensor::all(const Shape& dims, bool keepdim) const {
  return minidl::all(*this, dims, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return minidl::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return minidl::argsort(*this, dim, descending, stable);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return minidl::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::flip(const Shape& dims) const { return minidl::flip(*this, dims); }
Tensor Tensor::roll(const Shape& shifts, const Shape& dims) const {
  return minidl::roll(*this, shifts, dims);
}
Tensor Tensor::repeat(const Shape& repeats) const { return minidl::repeat(*this, repeats); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return minidl::repeat_interleave(*this, repeats, dim);
}
Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
  return minidl::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_select(const Tensor& mask) const {
  return minidl::masked_select(*this, mask);
}
Tensor Tensor::cumsum(int64_t dim) const { return minidl::cumsum(*this, dim); }
Tensor Tensor::cumprod(int64_t dim) const { return minidl::cumprod(*this, dim); }
Tensor Tensor::prod() const { return minidl::prod(*this); }
Tensor Tensor::prod(int64_t dim, bool keepdim) const { return minidl::prod(*this, dim, keepdim); }
Tensor Tensor::norm(double p, const Shape& dims, bool keepdim) const {
  return minidl::norm(*this, p, dims, keepdim);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return minidl::gather(*this, dim, index);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return minidl::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return minidl::scatter_add(*this, dim, index, src);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         double alpha) const {
  return minidl::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::tril(int64_t diagonal) const { return minidl::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return minidl::triu(*this, diagonal); }

}  // namespace minidl
