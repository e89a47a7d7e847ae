// CPU kernels of ops/scan_kernels.h: the lines (outer, inner) split across the threads, each
// scanned serially by the functions of ops/scan_math.h.
#include <algorithm>
#include <cstdint>

#include "minidl/core/parallel.h"
#include "minidl/ops/scan_kernels.h"
#include "minidl/ops/scan_math.h"

namespace minidl::cpu {

namespace {

// Calls fn(T{}) for the dtypes the scans take: the floating ones and int64 (ops/scan.cpp turns
// the other integers and bool into int64).
template <class Fn>
void visit_scan_dtype(DType dtype, const char* op, Fn&& fn) {
  if (dtype == kInt64) return fn(int64_t{});
  visit_floating(dtype, op, fn);
}

// Calls line(line_offset) for every line of an [outer, size, inner] tensor, in parallel: the
// offset of the line's first element.
template <class Line>
void for_each_line(int64_t outer, int64_t size, int64_t inner, Line&& line) {
  const int64_t lines_per_task = std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(1, size));
  parallel_for(0, outer * inner, lines_per_task, [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) line((n / inner) * size * inner + n % inner);
  });
}

void cumsum_kernel(const Tensor& out, const Tensor& input, int64_t outer, int64_t size,
                   int64_t inner, bool reverse) {
  visit_scan_dtype(input.dtype(), "cumsum", [&](auto zero) {
    using T = decltype(zero);
    T* to = static_cast<T*>(out.data_ptr());
    const T* from = static_cast<const T*>(input.data_ptr());
    for_each_line(outer, size, inner, [&](int64_t offset) {
      scan_math::cumsum_line(to + offset, from + offset, size, inner, reverse);
    });
  });
}

void cumprod_kernel(const Tensor& out, const Tensor& input, int64_t outer, int64_t size,
                    int64_t inner) {
  visit_scan_dtype(input.dtype(), "cumprod", [&](auto zero) {
    using T = decltype(zero);
    T* to = static_cast<T*>(out.data_ptr());
    const T* from = static_cast<const T*>(input.data_ptr());
    for_each_line(outer, size, inner, [&](int64_t offset) {
      scan_math::cumprod_line(to + offset, from + offset, size, inner);
    });
  });
}

void cumprod_backward_kernel(const Tensor& grad_input, const Tensor& grad, const Tensor& input,
                             int64_t outer, int64_t size, int64_t inner) {
  visit_floating(input.dtype(), "cumprod backward", [&](auto zero) {
    using T = decltype(zero);
    T* to = static_cast<T*>(grad_input.data_ptr());
    const T* grad_from = static_cast<const T*>(grad.data_ptr());
    const T* from = static_cast<const T*>(input.data_ptr());
    for_each_line(outer, size, inner, [&](int64_t offset) {
      scan_math::cumprod_backward_line(to + offset, grad_from + offset, from + offset, size, inner);
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const ScanKernels ScanKernels::kCpu{
    .cumsum = cpu::cumsum_kernel,
    .cumprod = cpu::cumprod_kernel,
    .cumprod_backward = cpu::cumprod_backward_kernel,
};

}  // namespace minidl
