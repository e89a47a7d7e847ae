#include "minidl/data/loader/device_copy_stage.h"

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"

namespace minidl::data::loader {

DeviceCopyStage::DeviceCopyStage(std::unique_ptr<BatchStage> upstream, Device device,
                                 cuda::Stream copy_stream)
    : upstream_(std::move(upstream)), device_(device), copy_stream_(std::move(copy_stream)) {}

Batch DeviceCopyStage::copy_to_device(const Batch& host) {
  cuda::DeviceGuard device_guard(device_.index);
  // Allocations and copies below go to the copy stream.
  cuda::StreamGuard stream_guard(copy_stream_);
  Batch device_batch;
  device_batch.images = host.images.to(device_);
  device_batch.labels = host.labels.to(device_);
  device_batch.indices = host.indices.to(device_);
  device_batch.epoch = host.epoch;
  device_batch.batch_index = host.batch_index;
  return device_batch;
}

DeviceCopyStage::InFlight DeviceCopyStage::fetch_and_copy() {
  InFlight result;
  try {
    std::optional<Batch> host = upstream_->next();
    if (!host) return result;
    result.batch = copy_to_device(*host);
    result.copied = std::make_shared<cuda::Event>();
    result.copied->record(copy_stream_);
  } catch (...) {
    result.batch.reset();
    result.error = std::current_exception();
  }
  return result;
}

std::optional<Batch> DeviceCopyStage::next() {
  InFlight current = prefetched_ ? std::move(*prefetched_) : fetch_and_copy();
  prefetched_.reset();
  if (current.error) std::rethrow_exception(current.error);
  if (!current.batch) return std::nullopt;
  // See Note [Overlapping batch copies]. An error while prefetching is kept for the next call,
  // so batches before the failing one are all delivered.
  if (upstream_->ready()) prefetched_ = fetch_and_copy();

  const cuda::Stream compute_stream = cuda::current_stream(device_.index);
  current.copied->wait(compute_stream);
  for (const Tensor* tensor :
       {&current.batch->images, &current.batch->labels, &current.batch->indices})
    if (tensor->numel() > 0) cuda::record_stream(*tensor->storage(), compute_stream);
  return std::move(current.batch);
}

}  // namespace minidl::data::loader
