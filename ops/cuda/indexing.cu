// CUDA gather and scatter (ops/indexing_kernels.h). gather is one thread per index element.
// scatter is deterministic (Note [Deterministic scatter_add] in ops/indexing.cpp): the index
// elements are stably sorted by the offset of the out element they name (cub's radix sort of
// (target, position) pairs), and the first thread of each run of equal targets applies the
// run in ascending position, from out's value: the sum in float32 for the 16-bit dtypes, or
// the run's last src element for Assign. Nothing is atomic, so out's bytes are the same on every
// run and equal to the CPU's.
//
// An out-of-range index is reported through Note [Deferred device errors]
// (core/cuda/device_error.h): gather writes a zero in its place, scatter sorts it past every
// real target and skips it. The temporaries come from the caching allocator (tensors from
// empty()), so a warm step calls no cudaMalloc.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <type_traits>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device_dtype.h"
#include "minidl/core/cuda/device_error.cuh"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/indexing_kernels.h"

namespace minidl::cuda {

namespace {

// Bits the radix sort needs for keys in [0, dropped] (the dropped key included).
int key_bits(uint64_t dropped) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= dropped) ++bits;
  return bits;
}

// ---- kernels ----

// out [index's shape] = self at the index.
template <class Word>
__global__ void gather_elements(Word* out, const Word* self, const int64_t* index, int64_t count,
                                IndexingGeometry geometry, DeviceErrorSlot error_slot) {
  for (const int64_t p : grid_stride_range(count)) {
    const indexing_math::Offsets offsets = indexing_math::offsets_of(geometry, p);
    const int64_t value = index[p];
    if (value < 0 || value >= geometry.self_dim_size) [[unlikely]] {
      report_device_error(error_slot, value, p, geometry.self_dim_size);
      out[offsets.other] = Word{0};
      continue;
    }
    out[offsets.other] =
        self[offsets.self_without_dim + value * geometry.self_strides[geometry.dim]];
  }
}

// keys [count] = the offset in out that index element p names (dropped, past every element of
// out, for an out-of-range index); positions [count] = p, which the stable sort carries along.
__global__ void scatter_sort_keys(uint64_t* keys, int64_t* positions, const int64_t* index,
                                  int64_t count, IndexingGeometry geometry, uint64_t dropped,
                                  DeviceErrorSlot error_slot) {
  for (const int64_t p : grid_stride_range(count)) {
    const int64_t value = index[p];
    positions[p] = p;
    if (value < 0 || value >= geometry.self_dim_size) [[unlikely]] {
      report_device_error(error_slot, value, p, geometry.self_dim_size);
      keys[p] = dropped;
      continue;
    }
    const indexing_math::Offsets offsets = indexing_math::offsets_of(geometry, p);
    keys[p] = static_cast<uint64_t>(offsets.self_without_dim +
                                    value * geometry.self_strides[geometry.dim]);
  }
}

// For each run of equal keys in sorted_keys [count]: out[key] = the src element of the run's
// last position (Assign), or out[key] plus the run's src elements in ascending position (Add).
// Element i of the sorted order; only the thread at a run's first element applies it.
template <class T, ScatterReduction kReduction>
__global__ void scatter_runs(T* out, const T* src, const uint64_t* sorted_keys,
                             const int64_t* sorted_positions, int64_t count,
                             IndexingGeometry geometry, uint64_t dropped) {
  for (const int64_t i : grid_stride_range(count)) {
    const uint64_t key = sorted_keys[i];
    if (key == dropped) continue;
    if (i > 0 && sorted_keys[i - 1] == key) continue;  // not the first of its run
    if constexpr (kReduction == ScatterReduction::Assign) {
      int64_t last = i;
      while (last + 1 < count && sorted_keys[last + 1] == key) ++last;
      out[key] = src[indexing_math::offsets_of(geometry, sorted_positions[last]).other];
    } else {
      using Accumulate = indexing_math::ScatterAccumulate<T>;
      Accumulate sum = static_cast<Accumulate>(out[key]);
      for (int64_t k = i; k < count && sorted_keys[k] == key; ++k)
        sum += static_cast<Accumulate>(
            src[indexing_math::offsets_of(geometry, sorted_positions[k]).other]);
      out[key] = static_cast<T>(sum);
    }
  }
}

// ---- launchers ----

void gather_kernel(const Tensor& out, const Tensor& self, const Tensor& index,
                   const IndexingGeometry& geometry, DescribeIndexError describe) {
  const int64_t count = index.numel();
  if (count == 0) return;
  LaunchContext context(self);
  const DeviceErrorSlot error_slot = device_error_slot(context.device, describe);
  visit_element_width(self.dtype(), [&](auto word) {
    using Word = decltype(word);
    gather_elements<Word>
        <<<elementwise_blocks(count, context.device), kThreadsPerBlock, 0, context.stream>>>(
            static_cast<Word*>(out.data_ptr()), static_cast<const Word*>(self.data_ptr()),
            index.data_ptr<int64_t>(), count, geometry, error_slot);
    MINIDL_LAUNCH_CHECK();
  });
}

template <ScatterReduction kReduction, class T>
void launch_scatter_runs(const Tensor& out, const Tensor& src, const Tensor& sorted_keys,
                         const Tensor& sorted_positions, int64_t count,
                         const IndexingGeometry& geometry, uint64_t dropped,
                         const LaunchContext& context) {
  scatter_runs<T, kReduction>
      <<<elementwise_blocks(count, context.device), kThreadsPerBlock, 0, context.stream>>>(
          static_cast<T*>(out.data_ptr()), static_cast<const T*>(src.data_ptr()),
          reinterpret_cast<const uint64_t*>(sorted_keys.data_ptr()),
          sorted_positions.data_ptr<int64_t>(), count, geometry, dropped);
  MINIDL_LAUNCH_CHECK();
}

void scatter_kernel(const Tensor& out, const Tensor& src, const Tensor& index,
                    const IndexingGeometry& geometry, ScatterReduction reduction,
                    DescribeIndexError describe) {
  const int64_t count = index.numel();
  if (count == 0) return;
  LaunchContext context(out);
  const DeviceErrorSlot error_slot = device_error_slot(context.device, describe);
  const uint64_t dropped = static_cast<uint64_t>(out.numel());

  // uint64 keys and int64 positions, stored in int64 tensors: [count] each, before and after
  // the sort.
  const TensorOptions keys_options = TensorOptions(kInt64).device(index.device());
  Tensor keys = empty({count}, keys_options), positions = empty({count}, keys_options);
  Tensor sorted_keys = empty({count}, keys_options),
         sorted_positions = empty({count}, keys_options);
  auto* key_data = reinterpret_cast<uint64_t*>(keys.data_ptr());
  auto* sorted_key_data = reinterpret_cast<uint64_t*>(sorted_keys.data_ptr());
  scatter_sort_keys<<<elementwise_blocks(count, context.device), kThreadsPerBlock, 0,
                      context.stream>>>(key_data, positions.data_ptr<int64_t>(),
                                        index.data_ptr<int64_t>(), count, geometry, dropped,
                                        error_slot);
  MINIDL_LAUNCH_CHECK();

  // Stable: equal keys keep their positions ascending.
  const int end_bit = key_bits(dropped);
  size_t temporary_bytes = 0;
  MINIDL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temporary_bytes, key_data, sorted_key_data, positions.data_ptr<int64_t>(),
      sorted_positions.data_ptr<int64_t>(), count, 0, end_bit, context.stream));
  Tensor temporary =
      empty({static_cast<int64_t>(temporary_bytes)}, TensorOptions(kUInt8).device(index.device()));
  MINIDL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temporary.data_ptr(), temporary_bytes, key_data,
                                                    sorted_key_data, positions.data_ptr<int64_t>(),
                                                    sorted_positions.data_ptr<int64_t>(), count, 0,
                                                    end_bit, context.stream));

  if (reduction == ScatterReduction::Assign) {
    visit_element_width(out.dtype(), [&](auto word) {
      launch_scatter_runs<ScatterReduction::Assign, decltype(word)>(
          out, src, sorted_keys, sorted_positions, count, geometry, dropped, context);
    });
    return;
  }
  visit_device_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>)
      MINIDL_INTERNAL_ASSERT(false, "scatter_add of bool tensors (the op refuses them)");
    else
      launch_scatter_runs<ScatterReduction::Add, T>(out, src, sorted_keys, sorted_positions, count,
                                                    geometry, dropped, context);
  });
}

}  // namespace

}  // namespace minidl::cuda

namespace minidl {

const IndexingKernels IndexingKernels::kCuda{
    .gather = cuda::gather_kernel,
    .scatter = cuda::scatter_kernel,
};

}  // namespace minidl
