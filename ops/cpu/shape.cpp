// CPU gathering and encoding: index_select, its index_add backward, one_hot.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "minidl/core/parallel.h"
#include "minidl/ops/around_dim.h"
#include "minidl/ops/shape_kernels.h"

namespace minidl::cpu {

namespace {

// Elements in a task of index_add, along the inner dimension: long enough runs for the
// compiler to vectorise, short enough that a few rows of many outer slices split well.
constexpr int64_t kIndexAddInnerBlock = 1024;

void check_indices(const int64_t* index, int64_t count, int64_t dim, int64_t size) {
  for (int64_t j = 0; j < count; ++j)
    MINIDL_CHECK(index[j] >= 0 && index[j] < size, "index_select: index ", index[j],
                 " is out of range for dimension ", dim, " of size ", size, " (at position ", j,
                 " of the index)");
}

void index_select_kernel(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const AroundDim shape = around_dim(x, dim);
  const int64_t count = index.numel();
  const int64_t* indices = index.data_ptr<int64_t>();
  check_indices(indices, count, dim, shape.size);
  // Rows of `inner` elements move as bytes, whatever the dtype.
  const size_t row_bytes = static_cast<size_t>(shape.inner) * x.element_size();
  const char* source = static_cast<const char*>(x.data_ptr());
  char* destination = static_cast<char*>(out.data_ptr());
  parallel_for(0, shape.outer * count,
               std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(1, shape.inner)),
               [&](int64_t first, int64_t last) {
                 for (int64_t row = first; row < last; ++row) {
                   const int64_t outer = row / count, j = row % count;
                   const int64_t source_row = outer * shape.size + indices[j];
                   std::memcpy(destination + row * row_bytes, source + source_row * row_bytes,
                               row_bytes);
                 }
               });
}

void index_add_kernel(const Tensor& grad_x, const Tensor& grad, int64_t dim, const Tensor& index) {
  const AroundDim shape = around_dim(grad_x, dim);
  const int64_t count = index.numel();
  const int64_t* indices = index.data_ptr<int64_t>();
  visit_floating(grad_x.dtype(), "index_select backward", [&](auto zero) {
    using T = decltype(zero);
    using Accumulate = std::conditional_t<std::is_same_v<T, double>, double, float>;
    T* destination = static_cast<T*>(grad_x.data_ptr());
    const T* source = static_cast<const T*>(grad.data_ptr());
    // Tasks own disjoint (outer slice, inner block) pairs and walk the whole index, so repeated
    // indices add up without atomics.
    const int64_t blocks = (shape.inner + kIndexAddInnerBlock - 1) / kIndexAddInnerBlock;
    const int64_t work_per_task =
        std::max<int64_t>(1, std::min(shape.inner, kIndexAddInnerBlock) * count);
    parallel_for(0, shape.outer * blocks, std::max<int64_t>(1, kDefaultGrain / work_per_task),
                 [&](int64_t first, int64_t last) {
                   for (int64_t task = first; task < last; ++task) {
                     const int64_t outer = task / blocks;
                     const int64_t begin = (task % blocks) * kIndexAddInnerBlock;
                     const int64_t end = std::min(shape.inner, begin + kIndexAddInnerBlock);
                     for (int64_t j = 0; j < count; ++j) {
                       T* to = destination + (outer * shape.size + indices[j]) * shape.inner;
                       const T* from = source + (outer * count + j) * shape.inner;
                       for (int64_t i = begin; i < end; ++i)
                         to[i] =
                             T(static_cast<Accumulate>(to[i]) + static_cast<Accumulate>(from[i]));
                     }
                   }
                 });
  });
}

void one_hot_kernel(const Tensor& out, const Tensor& labels, int64_t num_classes) {
  const int64_t count = labels.numel();
  const int64_t* label = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i)
    MINIDL_CHECK(label[i] >= 0 && label[i] < num_classes, "one_hot: label ", label[i],
                 " is out of range for ", num_classes, " classes (at position ", i, ")");
  int64_t* encoded = out.data_ptr<int64_t>();
  parallel_for(0, count, std::max<int64_t>(1, kDefaultGrain / std::max<int64_t>(1, num_classes)),
               [&](int64_t first, int64_t last) {
                 std::fill(encoded + first * num_classes, encoded + last * num_classes, int64_t{0});
                 for (int64_t i = first; i < last; ++i) encoded[i * num_classes + label[i]] = 1;
               });
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const ShapeKernels ShapeKernels::kCpu{
    .index_select = cpu::index_select_kernel,
    .index_add = cpu::index_add_kernel,
    .one_hot = cpu::one_hot_kernel,
};

}  // namespace minidl
