// CPU kernels of ops/indexing_kernels.h. gather splits the index across the threads; scatter
// walks the index serially in ascending position, which is what makes a repeated index's
// additions come in one fixed order (Note [Deterministic scatter_add] in ops/indexing.cpp).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "minidl/core/parallel.h"
#include "minidl/ops/indexing_kernels.h"

namespace minidl::cpu {

namespace {

void check_index(int64_t value, int64_t position, int64_t size, DescribeIndexError describe) {
  MINIDL_CHECK(value >= 0 && value < size, describe(value, position, size));
}

void check_indices(const int64_t* index, int64_t count, int64_t size, DescribeIndexError describe) {
  for (int64_t p = 0; p < count; ++p) check_index(index[p], p, size, describe);
}

void gather_kernel(const Tensor& out, const Tensor& self, const Tensor& index,
                   const IndexingGeometry& geometry, DescribeIndexError describe) {
  const int64_t count = index.numel();
  const int64_t* indices = index.data_ptr<int64_t>();
  check_indices(indices, count, geometry.self_dim_size, describe);
  const int64_t dim_stride = geometry.self_strides[geometry.dim];
  visit_dtype(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* from = static_cast<const T*>(self.data_ptr());
    T* to = static_cast<T*>(out.data_ptr());
    parallel_for(0, count, kDefaultGrain, [&](int64_t first, int64_t last) {
      for (int64_t p = first; p < last; ++p) {
        const indexing_math::Offsets offsets = indexing_math::offsets_of(geometry, p);
        to[offsets.other] = from[offsets.self_without_dim + indices[p] * dim_stride];
      }
    });
  });
}

void scatter_assign(const Tensor& out, const Tensor& src, const int64_t* indices, int64_t count,
                    const IndexingGeometry& geometry) {
  const int64_t dim_stride = geometry.self_strides[geometry.dim];
  visit_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* to = static_cast<T*>(out.data_ptr());
    const T* from = static_cast<const T*>(src.data_ptr());
    for (int64_t p = 0; p < count; ++p) {
      const indexing_math::Offsets offsets = indexing_math::offsets_of(geometry, p);
      to[offsets.self_without_dim + indices[p] * dim_stride] = from[offsets.other];
    }
  });
}

// out's elements are added to in Accumulate (a copy of out when that is wider than T) and
// rounded once at the end, in ascending position: the order and type of the CUDA kernel.
void scatter_add(const Tensor& out, const Tensor& src, const int64_t* indices, int64_t count,
                 const IndexingGeometry& geometry) {
  const int64_t dim_stride = geometry.self_strides[geometry.dim];
  visit_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Accumulate = indexing_math::ScatterAccumulate<T>;
    if constexpr (std::is_same_v<T, bool>) {
      MINIDL_INTERNAL_ASSERT(false, "scatter_add of bool tensors (the op refuses them)");
      return;
    }
    T* to = static_cast<T*>(out.data_ptr());
    const T* from = static_cast<const T*>(src.data_ptr());
    const auto add_all = [&](auto* sums) {
      for (int64_t p = 0; p < count; ++p) {
        const indexing_math::Offsets offsets = indexing_math::offsets_of(geometry, p);
        sums[offsets.self_without_dim + indices[p] * dim_stride] +=
            static_cast<Accumulate>(from[offsets.other]);
      }
    };
    if constexpr (std::is_same_v<Accumulate, T>) {
      add_all(to);
    } else {
      std::vector<Accumulate> sums(to, to + out.numel());
      add_all(sums.data());
      std::transform(sums.begin(), sums.end(), to, [](Accumulate sum) { return T(sum); });
    }
  });
}

void scatter_kernel(const Tensor& out, const Tensor& src, const Tensor& index,
                    const IndexingGeometry& geometry, ScatterReduction reduction,
                    DescribeIndexError describe) {
  const int64_t count = index.numel();
  const int64_t* indices = index.data_ptr<int64_t>();
  check_indices(indices, count, geometry.self_dim_size, describe);
  if (reduction == ScatterReduction::Assign)
    scatter_assign(out, src, indices, count, geometry);
  else
    scatter_add(out, src, indices, count, geometry);
}

}  // namespace

}  // namespace minidl::cpu

namespace minidl {

const IndexingKernels IndexingKernels::kCpu{
    .gather = cpu::gather_kernel,
    .scatter = cpu::scatter_kernel,
};

}  // namespace minidl
