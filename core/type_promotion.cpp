#include "minidl/core/type_promotion.h"

#include <optional>

#include "minidl/core/tensor.h"

namespace minidl {

namespace {

// bool < integer < floating.
int category(DType dtype) {
  if (dtype == kBool) return 0;
  return is_floating_point(dtype) ? 2 : 1;
}

// The wider of two dtypes of one category (float16 and bfloat16 meet in float32).
DType wider(DType a, DType b) {
  if (is_floating_point(a)) {
    if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
    return element_size(a) >= element_size(b) ? a : b;
  }
  // Integers: uint8 is the narrowest (it meets int32 or int64 as the signed one).
  if (a == kUInt8) return b;
  if (b == kUInt8) return a;
  return element_size(a) >= element_size(b) ? a : b;
}

// PyTorch's combine_categories: the higher-ranked operand's dtype, unless the lower-ranked one
// is of a higher category (or the higher-ranked one is bool), which promotes the two.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  return wider(a, b);
}

DType scalar_type(const Scalar& scalar) {
  return scalar.is_floating_point() ? kFloat32 : scalar.type();
}

DType result_type(const Tensor& a, const Tensor& b) {
  std::optional<DType> dimensioned, zero_dim;
  for (const Tensor* t : {&a, &b}) {
    std::optional<DType>& rank = t->dim() > 0 ? dimensioned : zero_dim;
    rank = rank ? promote_types(*rank, t->dtype()) : t->dtype();
  }
  return *combine(dimensioned, zero_dim);
}

DType result_type(const Tensor& tensor, const Scalar& scalar) {
  // A scalar ranks below a tensor of any number of dimensions.
  return *combine(tensor.dtype(), scalar_type(scalar));
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

}  // namespace minidl
