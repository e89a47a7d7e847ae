// CPU kernels of ops/sort_kernels.h: each row sorted on its own (rows split across the
// threads) by sorting its positions with the total order of Note [Sort order]
// (ops/sort_math.h): std::partial_sort when only the first k are wanted, else std::sort.
#include <algorithm>
#include <numeric>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/sort_kernels.h"
#include "minidl/ops/sort_math.h"

namespace minidl::cpu {

namespace {

// Elements one task sorts: a task takes whole rows, at least one.
constexpr int64_t kSortGrainElements = 16384;

int64_t rows_per_task(int64_t size) {
  return std::max<int64_t>(1, kSortGrainElements / std::max<int64_t>(1, size));
}

void sort_rows_kernel(const Tensor& values, const Tensor& indices, const Tensor& input,
                      bool descending) {
  const int64_t rows = input.size(0), size = input.size(1), k = values.size(1);
  visit_dtype(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = static_cast<const T*>(input.data_ptr());
    T* values_out = static_cast<T*>(values.data_ptr());
    int64_t* indices_out = static_cast<int64_t*>(indices.data_ptr());
    parallel_for(0, rows, rows_per_task(size), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(size));
      for (int64_t row = begin; row < end; ++row) {
        const T* row_in = in + row * size;
        const auto comes_first = [&](int64_t a, int64_t b) {
          return sort_math::precedes(row_in[a], a, row_in[b], b, descending);
        };
        std::iota(order.begin(), order.end(), int64_t{0});
        if (k < size)
          std::partial_sort(order.begin(), order.begin() + k, order.end(), comes_first);
        else
          std::sort(order.begin(), order.end(), comes_first);
        for (int64_t j = 0; j < k; ++j) {
          values_out[row * k + j] = row_in[order[j]];
          indices_out[row * k + j] = order[j];
        }
      }
    });
  });
}

void scatter_rows_grad_kernel(const Tensor& grad_input, const Tensor& grad, const Tensor& indices) {
  const int64_t rows = grad_input.size(0), size = grad_input.size(1), k = grad.size(1);
  visit_floating(grad.dtype(), "sort backward", [&](auto zero) {
    using T = decltype(zero);
    T* grad_in = static_cast<T*>(grad_input.data_ptr());
    const T* grad_out = static_cast<const T*>(grad.data_ptr());
    const int64_t* index = static_cast<const int64_t*>(indices.data_ptr());
    parallel_for(0, rows, rows_per_task(size), [&](int64_t begin, int64_t end) {
      std::fill(grad_in + begin * size, grad_in + end * size, T{});  // T{} is +0
      for (int64_t row = begin; row < end; ++row)
        for (int64_t j = 0; j < k; ++j)
          grad_in[row * size + index[row * k + j]] = grad_out[row * k + j];
    });
  });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const SortKernels SortKernels::kCpu{
    .sort_rows = cpu::sort_rows_kernel,
    .scatter_rows_grad = cpu::scatter_rows_grad_kernel,
};

}  // namespace minidl
