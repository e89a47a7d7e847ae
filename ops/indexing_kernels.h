#pragma once
// The kernel interface of gather and scatter (ops/indexing.cpp; scatter_add, index_add and their
// in-place forms go through `scatter`), implemented by ops/cpu/indexing.cpp and
// ops/cuda/indexing.cu; dispatched by kernels_for (Note [Kernel tables] in core/dispatch.h).
//
// Conventions: every tensor is contiguous and on one device; index is int64. An IndexingGeometry
// (ops/indexing_math.h) maps each element of index to the element of `self` it names (x for
// gather, out for scatter) and the element of `other` it pairs with (out for gather, src for
// scatter). Both kernels write only what the index names: gather overwrites all of out (out has
// index's shape), scatter updates out in place (the op fills it with x first).
//
// Out-of-range indices: on the CPU a minidl::Error naming the first one, from `describe`. On
// CUDA one is reported through Note [Deferred device errors] (core/cuda/device_error.h) with
// `describe`; gather writes a zero in its place, scatter skips it. CUDA kernels run on the
// current stream and never synchronise the host; scatter's temporary buffers come from the
// caching allocator.
#include <cstdint>
#include <string>

#include "minidl/core/tensor.h"
#include "minidl/ops/indexing_math.h"

namespace minidl {

// Builds an index error's message from the bad index, its position in the index tensor and the
// size it had to stay below: the op's own, the same on both backends (and, on CUDA, the
// DescribeDeviceError of core/cuda/device_error.h).
using DescribeIndexError = std::string (*)(int64_t index, int64_t position, int64_t size);

// What scatter does where the index names an element.
enum class ScatterReduction {
  Assign,  // out[target] = src: where several positions name one element, the last one wins
  Add,     // out[target] += src, Note [Deterministic scatter_add]
};

struct IndexingKernels {
  // out [index's shape] = self at the index along geometry.dim; any dtype.
  void (*gather)(const Tensor& out, const Tensor& self, const Tensor& index,
                 const IndexingGeometry& geometry, DescribeIndexError describe);
  // out (= self) at the index along geometry.dim: src's element, or out's plus the sum of the
  // src elements that name it (Note [Deterministic scatter_add] in ops/indexing.cpp: from out's
  // value, in ascending position in the index, in float32 for the 16-bit dtypes and rounded
  // once). Assign takes any dtype, Add a numeric one.
  void (*scatter)(const Tensor& out, const Tensor& src, const Tensor& index,
                  const IndexingGeometry& geometry, ScatterReduction reduction,
                  DescribeIndexError describe);

  static const IndexingKernels kCpu;
  static const IndexingKernels kCuda;
};

}  // namespace minidl
