#pragma once
// What a DataLoader does, as a small struct with chained setters:
//
//   DataLoaderOptions(128).shuffle(true).num_workers(2).device(Device(kCUDA))
//       .augment(AugmentOptions().random_crop(4).horizontal_flip().normalize(mean, std))
#include <chrono>
#include <cstdint>
#include <optional>

#include "minidl/core/device.h"
#include "minidl/data/transforms/batch_augment.h"

namespace minidl::data {

class DataLoaderOptions {
 public:
  explicit DataLoaderOptions(int64_t batch_size = 1) : batch_size_(batch_size) {}

  DataLoaderOptions& batch_size(int64_t value) {
    batch_size_ = value;
    return *this;
  }
  // A RandomSampler reshuffled every epoch (from seed and epoch) instead of sequential order.
  // Not with an explicit sampler.
  DataLoaderOptions& shuffle(bool value) {
    shuffle_ = value;
    return *this;
  }
  // Drop the last batch of an epoch when it is smaller than batch_size.
  DataLoaderOptions& drop_last(bool value) {
    drop_last_ = value;
    return *this;
  }
  // Threads that build batches; 0 builds them in the calling thread, when they are asked for.
  DataLoaderOptions& num_workers(int value) {
    num_workers_ = value;
    return *this;
  }
  // How many batches the workers may build ahead of the one the caller is waiting for; 0 (the
  // default) means two per worker. Bounds the host memory in use to about that many batches.
  DataLoaderOptions& prefetch_depth(int64_t value) {
    prefetch_depth_ = value;
    return *this;
  }
  // Build batches in the pinned host pool (core/cuda/pinned_allocator.h), whose blocks are
  // recycled and copy to a GPU asynchronously; plain aligned memory when there is no GPU.
  DataLoaderOptions& pin_memory(bool value) {
    pin_memory_ = value;
    return *this;
  }
  // Where batches are delivered. For a CUDA device, each batch is copied on the loader's copy
  // stream and the current stream waits for it on the device (the host never waits).
  DataLoaderOptions& device(Device value) {
    device_ = value;
    return *this;
  }
  // Upload the whole dataset to `device` once (as it is, uint8 for the readers' datasets) and
  // gather each batch there; no workers, no per-batch host work. The dataset must not vary
  // with the epoch: do random augmentation with augment() instead.
  DataLoaderOptions& device_resident(bool value) {
    device_resident_ = value;
    return *this;
  }
  // Crop, flip and normalise each batch on `device` (data/transforms/batch_augment.h); draws from
  // (augment seed, epoch, sample index), as the per-sample transforms do.
  DataLoaderOptions& augment(AugmentOptions value) {
    augment_ = std::move(value);
    return *this;
  }
  // Seeds the shuffle (RandomSampler).
  DataLoaderOptions& seed(uint64_t value) {
    seed_ = value;
    return *this;
  }
  // How long the caller waits for a worker's batch before it is an error (the worker is
  // reported as stuck); also how long shutdown waits for a stuck worker before leaving it
  // behind. Zero waits forever. Applies to workers only: with num_workers(0) the caller does
  // the work itself.
  DataLoaderOptions& timeout(std::chrono::milliseconds value) {
    timeout_ = value;
    return *this;
  }

  int64_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  bool drop_last() const { return drop_last_; }
  int num_workers() const { return num_workers_; }
  int64_t prefetch_depth() const { return prefetch_depth_; }
  // prefetch_depth() with the default resolved.
  int64_t effective_prefetch_depth() const {
    const int64_t workers = num_workers_ > 0 ? num_workers_ : 1;
    return prefetch_depth_ > 0 ? prefetch_depth_ : 2 * workers;
  }
  bool pin_memory() const { return pin_memory_; }
  Device device() const { return device_; }
  bool device_resident() const { return device_resident_; }
  const std::optional<AugmentOptions>& augment() const { return augment_; }
  uint64_t seed() const { return seed_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  int64_t batch_size_;
  bool shuffle_ = false;
  bool drop_last_ = false;
  int num_workers_ = 0;
  int64_t prefetch_depth_ = 0;
  bool pin_memory_ = true;
  Device device_;
  bool device_resident_ = false;
  std::optional<AugmentOptions> augment_;
  uint64_t seed_ = 0;
  // Far above any sane time to build one batch, yet an error rather than a silent hang.
  std::chrono::milliseconds timeout_{std::chrono::minutes(5)};
};

}  // namespace minidl::data
