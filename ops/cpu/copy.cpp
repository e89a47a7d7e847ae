#include <cstring>
#include <type_traits>

#include "minidl/ops/copy_kernels.h"
#include "minidl/ops/cpu/loops.h"
#include "minidl/ops/cpu/vector_versions.h"
#include "minidl/ops/iteration_shape.h"

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

// out[i] = convert(in[i]) over [begin, end): a flat loop the compiler vectorises, compiled a
// second time for AVX-512 where bfloat16 is read or written (Note [Loops compiled for AVX-512 and
// AVX2]: the rounding to bfloat16 is integer arithmetic, 16 lanes at a time there). Measured in the
// GPT's bfloat16 step (2 threads), where autocast's casts and the products' float32 results
// convert about 40M elements a step: strided_loop's per-element walk took 22% of the step.
template <class To, class From>
inline void convert_range(To* out, const From* in, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) out[i] = convert<To>(in[i]);
}
template <class To, class From>
MINIDL_AVX512 void convert_range_avx512(To* out, const From* in, int64_t begin, int64_t end) {
  convert_range(out, in, begin, end);
}

// out[0, count) = convert(in[0, count)), on the AVX-512 version where it has one.
template <class To, class From>
void convert_run(To* out, const From* in, int64_t count) {
  if constexpr (std::is_same_v<To, From>) {
    std::memcpy(out, in, static_cast<size_t>(count) * sizeof(To));
  } else {
    if constexpr (std::is_same_v<To, BFloat16> || std::is_same_v<From, BFloat16>) {
      if (has_avx512()) return convert_range_avx512(out, in, 0, count);
    }
    convert_range(out, in, 0, count);
  }
}

// strided_loop's arguments (outermost dimension first) for walking the operands (dst first) in
// dst's memory order with contiguous dimensions merged (Note [Element-wise geometry]): stores
// run with unit stride into any layout, and a conversion or fill of contiguous tensors is one
// run.
template <size_t N>
struct MemoryOrderLoop {
  Shape sizes;
  std::array<Shape, N> strides;
};

template <size_t N>
MemoryOrderLoop<N> memory_order_loop(const Shape& sizes,
                                     const std::array<const Shape*, N>& strides) {
  const IterationShape<N> shape = make_iteration_shape<N>(sizes, strides);
  MemoryOrderLoop<N> loop;
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    loop.sizes.push_back(shape.sizes[d]);
    for (size_t k = 0; k < N; ++k) loop.strides[k].push_back(shape.strides[d][k]);
  }
  return loop;
}

void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  const MemoryOrderLoop<2> loop =
      memory_order_loop<2>(dst.sizes(), {&dst.strides(), &src.strides()});
  visit_dtype(dst.dtype(), [&](auto dst_zero) {
    using To = decltype(dst_zero);
    visit_dtype(src.dtype(), [&](auto src_zero) {
      using From = decltype(src_zero);
      To* out = static_cast<To*>(dst.data_ptr());
      const From* in = static_cast<const From*>(src.data_ptr());
      // A run dense on both sides converts as a flat array: a conversion between tensors of one
      // dense layout is one run (split over the threads), a transposing copy (attention's heads
      // made contiguous) one per row. Any other walks element by element. (A single element,
      // whose loop has no dimension left, is a run of one.)
      const int64_t out_step = loop.sizes.empty() ? 1 : loop.strides[0].back();
      const int64_t in_step = loop.sizes.empty() ? 1 : loop.strides[1].back();
      const bool dense_runs = out_step == 1 && in_step == 1;
      strided_runs<2>(loop.sizes, loop.strides, [&](std::array<int64_t, 2> at, int64_t run) {
        if (dense_runs) return convert_run(out + at[0], in + at[1], run);
        for (int64_t j = 0; j < run; ++j) {
          out[at[0]] = convert<To>(in[at[1]]);
          at[0] += out_step;
          at[1] += in_step;
        }
      });
    });
  });
}

void fill_kernel(const Tensor& dst, double value) {
  const MemoryOrderLoop<1> loop = memory_order_loop<1>(dst.sizes(), {&dst.strides()});
  visit_dtype(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T fill = convert<T>(value);
    T* out = static_cast<T*>(dst.data_ptr());
    strided_loop<1>(loop.sizes, loop.strides,
                    [&](const std::array<int64_t, 1>& at) { out[at[0]] = fill; });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const CopyKernels CopyKernels::kCpu{
    .copy = cpu::copy_kernel,
    .fill = cpu::fill_kernel,
};

}  // namespace minidl
