#include "minidl/ops/cpu/copy.h"

#include <cstring>
#include <type_traits>

#include "minidl/ops/cpu/loops.h"

namespace minidl::cpu {

namespace {

template <class T>
constexpr bool is_16bit_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Converts as PyTorch does: the 16-bit types through float, to bool as `!= 0`, and floating
// point to integers through int64, so that negative values wrap into unsigned types instead of
// being undefined behaviour (NaN and values beyond int64's range become 0).
template <class To, class From>
To convert(From value) {
  if constexpr (is_16bit_float_v<From>) {
    return convert<To>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (is_16bit_float_v<To>) {
    return To(static_cast<float>(value));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    constexpr From kInt64Bound = From(9.2e18);
    if (!(value > -kInt64Bound && value < kInt64Bound)) return To(0);
    return static_cast<To>(static_cast<int64_t>(value));
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace

void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  visit_dtype(dst.dtype(), [&](auto dst_zero) {
    using To = decltype(dst_zero);
    visit_dtype(src.dtype(), [&](auto src_zero) {
      using From = decltype(src_zero);
      To* out = static_cast<To*>(dst.data_ptr());
      const From* in = static_cast<const From*>(src.data_ptr());
      strided_loop<2>(dst.sizes(), {dst.strides(), src.strides()},
                      [&](const std::array<int64_t, 2>& at) {
                        out[at[0]] = convert<To>(in[at[1]]);
                      });
    });
  });
}

void fill_kernel(const Tensor& dst, double value) {
  visit_dtype(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T fill = convert<T>(value);
    T* out = static_cast<T*>(dst.data_ptr());
    strided_loop<1>(dst.sizes(), {dst.strides()},
                    [&](const std::array<int64_t, 1>& at) { out[at[0]] = fill; });
  });
}

}  // namespace minidl::cpu
