#pragma once
// What a DataLoader does, as a small struct with chained setters:
//
//   DataLoaderOptions(128).shuffle(true).num_workers(2).device(Device(kCUDA))
//       .augment(AugmentOptions().random_crop(4).horizontal_flip().normalize(mean, std))
#include <chrono>
#include <cstdint>
#include <optional>

#include "minidl/core/arg.h"
#include "minidl/core/device.h"
#include "minidl/data/transforms/batch_augment.h"

namespace minidl::data {

class DataLoaderOptions {
 public:
  explicit DataLoaderOptions(int64_t batch_size = 1) : batch_size_(batch_size) {}

  // Crop, flip and normalise each batch on `device` (data/transforms/batch_augment.h); draws from
  // (augment seed, epoch, sample index), as the per-sample transforms do. Unset: no augmentation.
  DataLoaderOptions& augment(AugmentOptions value) {
    augment_ = std::move(value);
    return *this;
  }
  const std::optional<AugmentOptions>& augment() const { return augment_; }
  // prefetch_depth() with the default resolved.
  int64_t effective_prefetch_depth() const {
    const int64_t workers = num_workers_ > 0 ? num_workers_ : 1;
    return prefetch_depth_ > 0 ? prefetch_depth_ : 2 * workers;
  }

  MINIDL_ARG(int64_t, batch_size);
  // A RandomSampler reshuffled every epoch (from seed and epoch) instead of sequential order.
  // Not with an explicit sampler.
  MINIDL_ARG(bool, shuffle) = false;
  // Drop the last batch of an epoch when it is smaller than batch_size.
  MINIDL_ARG(bool, drop_last) = false;
  // Threads that build batches; 0 builds them in the calling thread, when they are asked for.
  MINIDL_ARG(int, num_workers) = 0;
  // How many batches the workers may build ahead of the one the caller is waiting for; 0 (the
  // default) means two per worker. Bounds the host memory in use to about that many batches.
  MINIDL_ARG(int64_t, prefetch_depth) = 0;
  // Build batches in the pinned host pool (core/cuda/pinned_allocator.h), whose blocks are
  // recycled and copy to a GPU asynchronously; plain aligned memory when there is no GPU.
  MINIDL_ARG(bool, pin_memory) = true;
  // Where batches are delivered. For a CUDA device, each batch is copied on the loader's copy
  // stream and the current stream waits for it on the device (the host never waits).
  MINIDL_ARG(Device, device);
  // Upload the whole dataset to `device` once (as it is, uint8 for the readers' datasets) and
  // gather each batch there; no workers, no per-batch host work. The dataset must not vary
  // with the epoch: do random augmentation with augment() instead.
  MINIDL_ARG(bool, device_resident) = false;
  // Seeds the shuffle (RandomSampler).
  MINIDL_ARG(uint64_t, seed) = 0;
  // How long the caller waits for a worker's batch before it is an error (the worker is
  // reported as stuck); also how long shutdown waits for a stuck worker before leaving it
  // behind. Zero waits forever. Applies to workers only: with num_workers(0) the caller does
  // the work itself. The default is far above any sane time to build one batch, yet an error
  // rather than a silent hang.
  MINIDL_ARG(std::chrono::milliseconds, timeout){std::chrono::minutes(5)};

 private:
  std::optional<AugmentOptions> augment_;
};

}  // namespace minidl::data
