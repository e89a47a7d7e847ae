#pragma once
// from_blob: a tensor over memory the caller owns, without a copy, as torch::from_blob.
//
//   std::vector<float> buffer(6);
//   Tensor t = from_blob(buffer.data(), {2, 3});   // float32, CPU; t aliases buffer
//   t.fill_(1);                                    // buffer now holds ones
//
// Lifetime: the tensor borrows `data`. The memory must stay valid (and on `options.device()`)
// for as long as any tensor sharing it lives: the tensor itself, its copies (a Tensor is a
// handle), every view of it (slice, index, transpose, ...) and anything autograd saved for
// backward. The overloads without a deleter never free it; with a deleter, minidl calls
// `deleter(data)` once, when the last of those tensors is destroyed (on whichever thread drops
// it), and the memory then belongs to the deleter. A from_blob call that throws (bad sizes,
// strides or options) does not call the deleter: the memory stays the caller's.
//
// options: dtype says how to read the bytes; device says where `data` already lives (a CUDA
// pointer for kCUDA, which is not checked: the memory is not the caching allocator's, so
// cuda::record_stream refuses it and the caller synchronises its own streams); requires_grad
// makes the result a leaf that requires grad. In-place ops write through to `data`.
#include <functional>

#include "minidl/core/tensor.h"

namespace minidl {

using BlobDeleter = std::function<void(void*)>;

// Row-major (contiguous) strides.
Tensor from_blob(void* data, const Shape& sizes, const TensorOptions& options = {});
// Strides in elements; they must not be negative.
Tensor from_blob(void* data, const Shape& sizes, const Shape& strides,
                 const TensorOptions& options = {});
// `deleter(data)` runs when the last tensor sharing the memory is destroyed.
Tensor from_blob(void* data, const Shape& sizes, const BlobDeleter& deleter,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, const BlobDeleter& deleter,
                 const TensorOptions& options = {});

}  // namespace minidl
