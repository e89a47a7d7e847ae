// from_blob: a Storage whose shared_ptr<void> holds the caller's pointer with a no-op or the
// caller's deleter, so the memory is released (or not) exactly when the last tensor sharing the
// Storage dies. Every check runs before the deleter is attached: a call that throws leaves the
// memory to the caller and never calls its deleter.
#include "minidl/core/from_blob.h"

#include "minidl/core/cuda/device.h"

namespace minidl {

namespace {

void check_blob(const void* data, const Shape& sizes, const Shape& strides,
                const TensorOptions& options) {
  MINIDL_CHECK(sizes.size() == strides.size(), "from_blob: got ", sizes.size(), " sizes ", sizes,
               " and ", strides.size(), " strides ", strides);
  for (int64_t size : sizes)
    MINIDL_CHECK(size >= 0, "from_blob: sizes must be non-negative, got ", sizes);
  for (int64_t stride : strides)
    MINIDL_CHECK(stride >= 0, "from_blob: strides must be non-negative, got ", strides);
  MINIDL_CHECK(data != nullptr || shape_numel(sizes) == 0, "from_blob: data is null but sizes ",
               sizes, " hold ", shape_numel(sizes), " elements");
  MINIDL_CHECK(!options.requires_grad() || is_floating_point(options.dtype()),
               "from_blob: only floating-point tensors can require gradients, got ",
               options.dtype());
  const Device device = options.device();
  if (device.is_cuda()) {
    cuda::require_available("from_blob on a CUDA device");
    MINIDL_CHECK(device.index >= 0 && device.index < cuda::device_count(),
                 "from_blob: expected a CUDA device index in [0, ", cuda::device_count(), "), got ",
                 device.index);
    MINIDL_CHECK(options.dtype() != kFloat64,
                 "float64 tensors are supported on the CPU only (for gradient checks), not on ",
                 device);
  }
}

// Elements from the first to one past the last addressed one.
int64_t span_of(const Shape& sizes, const Shape& strides) {
  int64_t span = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    span += (sizes[i] - 1) * strides[i];
  }
  return span;
}

Tensor make_blob_tensor(std::shared_ptr<void> memory, const Shape& sizes, const Shape& strides,
                        const TensorOptions& options) {
  const size_t nbytes =
      static_cast<size_t>(span_of(sizes, strides)) * element_size(options.dtype());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(std::move(memory), nbytes, options.device());
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = options.dtype();
  Tensor result(std::move(impl));
  if (options.requires_grad()) result.requires_grad_(true);
  return result;
}

}  // namespace

Tensor from_blob(void* data, const Shape& sizes, const TensorOptions& options) {
  return from_blob(data, sizes, contiguous_strides(sizes), options);
}

Tensor from_blob(void* data, const Shape& sizes, const Shape& strides,
                 const TensorOptions& options) {
  check_blob(data, sizes, strides, options);
  return make_blob_tensor(std::shared_ptr<void>(data, [](void*) {}), sizes, strides, options);
}

Tensor from_blob(void* data, const Shape& sizes, const BlobDeleter& deleter,
                 const TensorOptions& options) {
  return from_blob(data, sizes, contiguous_strides(sizes), deleter, options);
}

Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, const BlobDeleter& deleter,
                 const TensorOptions& options) {
  MINIDL_CHECK(static_cast<bool>(deleter),
               "from_blob: the deleter is empty; use the overload without a deleter to borrow "
               "memory that minidl must not free");
  check_blob(data, sizes, strides, options);
  // If allocating the control block fails, shared_ptr calls the deleter, as it must: past
  // this point the memory is minidl's to release.
  return make_blob_tensor(std::shared_ptr<void>(data, deleter), sizes, strides, options);
}

}  // namespace minidl
