#include "minidl/data/loader/host_batch.h"

#include <cstddef>
#include <exception>

#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/error.h"

namespace minidl::data::loader {

namespace {

Tensor new_host_tensor(const Shape& sizes, DType dtype, bool pinned) {
  return pinned ? cuda::empty_pinned(sizes, dtype) : empty(sizes, dtype);
}

}  // namespace

std::optional<Batch> build_host_batch(const Dataset& dataset, const HostBatchRequest& request,
                                      const std::atomic<bool>* cancelled,
                                      std::atomic<int64_t>* current_sample) {
  const ImageSpec spec = dataset.image_spec();
  const auto count = static_cast<int64_t>(request.indices.size());
  Batch batch;
  batch.epoch = request.epoch;
  batch.batch_index = request.batch_index;
  batch.images = new_host_tensor({count, spec.channels, spec.height, spec.width}, spec.dtype,
                                 request.pin_memory);
  batch.labels = new_host_tensor({count}, kInt64, request.pin_memory);
  batch.indices = new_host_tensor({count}, kInt64, request.pin_memory);
  auto* images = static_cast<std::byte*>(batch.images.data_ptr());
  int64_t* labels = batch.labels.data_ptr<int64_t>();
  int64_t* indices = batch.indices.data_ptr<int64_t>();
  const size_t image_bytes = spec.nbytes();
  for (int64_t slot = 0; slot < count; ++slot) {
    if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) return std::nullopt;
    const int64_t index = request.indices[static_cast<size_t>(slot)];
    if (current_sample != nullptr) current_sample->store(index, std::memory_order_relaxed);
    indices[slot] = index;
    try {
      labels[slot] = dataset.read(index, request.epoch, images + slot * image_bytes);
    } catch (const std::exception& error) {
      MINIDL_CHECK(false, "reading sample ", index, " (batch ", request.batch_index, " of epoch ",
                   request.epoch, ") failed: ", error.what());
    }
  }
  return batch;
}

}  // namespace minidl::data::loader
