#include "ops/cpu/copy.h"

#include <cstring>
#include <type_traits>

#include "ops/cpu/loops.h"

namespace minidl::cpu {

namespace {

// Converts through float for the 16-bit types and through `!= 0` for bool, as PyTorch does.
template <class To, class From>
To convert(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>)
      return static_cast<float>(value) != 0.0f;
    else
      return value != From(0);
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>)
      return To(static_cast<float>(value));
    else
      return static_cast<To>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(value));
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
