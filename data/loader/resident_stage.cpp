#include "minidl/data/loader/resident_stage.h"

#include <cstddef>
#include <cstring>

#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/data/datasets/in_memory_dataset.h"
#include "minidl/data/loader/gather_rows.h"

namespace minidl::data::loader {

std::shared_ptr<const ResidentDataset> upload_dataset(const Dataset& dataset, Device device) {
  auto resident = std::make_shared<ResidentDataset>();
  if (const auto* in_memory = dynamic_cast<const InMemoryDataset*>(&dataset)) {
    resident->images = in_memory->images();
    resident->labels = in_memory->labels();
  } else {
    const ImageSpec spec = dataset.image_spec();
    const int64_t size = dataset.size();
    resident->images = empty({size, spec.channels, spec.height, spec.width}, spec.dtype);
    resident->labels = empty({size}, kInt64);
    auto* images = static_cast<std::byte*>(resident->images.data_ptr());
    int64_t* labels = resident->labels.data_ptr<int64_t>();
    for (int64_t i = 0; i < size; ++i)
      labels[i] = dataset.read(i, /*epoch=*/0, images + static_cast<size_t>(i) * spec.nbytes());
  }
  if (device.is_cuda()) {
    cuda::DeviceGuard device_guard(device.index);
    resident->images = resident->images.to(device);
    resident->labels = resident->labels.to(device);
    cuda::current_stream(device.index).synchronize();
  }
  return resident;
}

ResidentStage::ResidentStage(std::shared_ptr<const ResidentDataset> resident,
                             std::shared_ptr<const EpochPlan> plan, Device device)
    : resident_(std::move(resident)), plan_(std::move(plan)), next_batch_(plan_->first_batch()) {
  const auto length = static_cast<int64_t>(plan_->order().size());
  Tensor host_order =
      device.is_cuda() ? cuda::empty_pinned({length}, kInt64) : empty({length}, kInt64);
  if (length > 0) std::memcpy(host_order.data_ptr(), plan_->order().data(), host_order.nbytes());
  order_ = device.is_cuda() ? host_order.to(device) : host_order;
}

std::optional<Batch> ResidentStage::next() {
  if (next_batch_ >= plan_->num_batches()) return std::nullopt;
  const int64_t k = next_batch_++;
  const Tensor rows =
      order_.narrow(0, plan_->batch_start(k), static_cast<int64_t>(plan_->batch(k).size()));
  Batch batch;
  batch.images = gather_rows(resident_->images, rows);
  batch.labels = gather_rows(resident_->labels, rows);
  batch.indices = rows;
  batch.epoch = plan_->epoch();
  batch.batch_index = k;
  return batch;
}

}  // namespace minidl::data::loader
