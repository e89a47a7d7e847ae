// Placeholders until the real implementation lands; this file is deleted then.
#include "ops/elementwise.h"

namespace minidl {

Tensor& Tensor::add_(const Tensor&, double) { MINIDL_CHECK(false, "add_: not implemented yet"); return *this; }
Tensor& Tensor::add_(double) { MINIDL_CHECK(false, "add_: not implemented yet"); return *this; }
Tensor& Tensor::sub_(const Tensor&, double) { MINIDL_CHECK(false, "sub_: not implemented yet"); return *this; }
Tensor& Tensor::mul_(const Tensor&) { MINIDL_CHECK(false, "mul_: not implemented yet"); return *this; }
Tensor& Tensor::mul_(double) { MINIDL_CHECK(false, "mul_: not implemented yet"); return *this; }
Tensor& Tensor::div_(double) { MINIDL_CHECK(false, "div_: not implemented yet"); return *this; }
Tensor neg(const Tensor& x) { MINIDL_CHECK(false, "neg: not implemented yet"); return {}; }
Tensor exp(const Tensor& x) { MINIDL_CHECK(false, "exp: not implemented yet"); return {}; }
Tensor log(const Tensor& x) { MINIDL_CHECK(false, "log: not implemented yet"); return {}; }
Tensor sqrt(const Tensor& x) { MINIDL_CHECK(false, "sqrt: not implemented yet"); return {}; }
Tensor abs(const Tensor& x) { MINIDL_CHECK(false, "abs: not implemented yet"); return {}; }
Tensor relu(const Tensor& x) { MINIDL_CHECK(false, "relu: not implemented yet"); return {}; }
Tensor sigmoid(const Tensor& x) { MINIDL_CHECK(false, "sigmoid: not implemented yet"); return {}; }
Tensor tanh(const Tensor& x) { MINIDL_CHECK(false, "tanh: not implemented yet"); return {}; }
Tensor gelu(const Tensor& x) { MINIDL_CHECK(false, "gelu: not implemented yet"); return {}; }
Tensor pow(const Tensor& x, double exponent) { MINIDL_CHECK(false, "pow: not implemented yet"); return {}; }
Tensor add(const Tensor& a, const Tensor& b, double alpha) { MINIDL_CHECK(false, "add: not implemented yet"); return {}; }
Tensor sub(const Tensor& a, const Tensor& b, double alpha) { MINIDL_CHECK(false, "sub: not implemented yet"); return {}; }
Tensor mul(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "mul: not implemented yet"); return {}; }
Tensor div(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "div: not implemented yet"); return {}; }
Tensor maximum(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "maximum: not implemented yet"); return {}; }
Tensor minimum(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "minimum: not implemented yet"); return {}; }
Tensor add(const Tensor& a, double b) { MINIDL_CHECK(false, "add: not implemented yet"); return {}; }
Tensor sub(const Tensor& a, double b) { MINIDL_CHECK(false, "sub: not implemented yet"); return {}; }
Tensor mul(const Tensor& a, double b) { MINIDL_CHECK(false, "mul: not implemented yet"); return {}; }
Tensor div(const Tensor& a, double b) { MINIDL_CHECK(false, "div: not implemented yet"); return {}; }
Tensor eq(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "eq: not implemented yet"); return {}; }
Tensor ne(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "ne: not implemented yet"); return {}; }
Tensor lt(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "lt: not implemented yet"); return {}; }
Tensor le(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "le: not implemented yet"); return {}; }
Tensor gt(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "gt: not implemented yet"); return {}; }
Tensor ge(const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "ge: not implemented yet"); return {}; }
Tensor eq(const Tensor& a, double b) { MINIDL_CHECK(false, "eq: not implemented yet"); return {}; }
Tensor ne(const Tensor& a, double b) { MINIDL_CHECK(false, "ne: not implemented yet"); return {}; }
Tensor lt(const Tensor& a, double b) { MINIDL_CHECK(false, "lt: not implemented yet"); return {}; }
Tensor le(const Tensor& a, double b) { MINIDL_CHECK(false, "le: not implemented yet"); return {}; }
Tensor gt(const Tensor& a, double b) { MINIDL_CHECK(false, "gt: not implemented yet"); return {}; }
Tensor ge(const Tensor& a, double b) { MINIDL_CHECK(false, "ge: not implemented yet"); return {}; }
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) { MINIDL_CHECK(false, "where: not implemented yet"); return {}; }

}  // namespace minidl
