#pragma once
// Building one batch on the host: each sample is read by the dataset straight into its slot of
// the batch's images tensor, which comes from the pinned pool when asked (its blocks are
// recycled once the batch, and any copy queued from it, is done).
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>

#include "minidl/data/batch.h"
#include "minidl/data/datasets/dataset.h"

namespace minidl::data::loader {

struct HostBatchRequest {
  std::span<const int64_t> indices;  // the samples, in order
  int64_t epoch = 0;
  int64_t batch_index = 0;
  bool pin_memory = true;
};

// The batch, or nullopt when `cancelled` became true before it was complete (checked between
// samples). `current_sample`, when given, is set to each sample index before it is read, so a
// stuck read can be reported. A dataset error becomes a minidl::Error that names the sample,
// the batch and the epoch, and keeps the dataset's message.
std::optional<Batch> build_host_batch(const Dataset& dataset, const HostBatchRequest& request,
                                      const std::atomic<bool>* cancelled = nullptr,
                                      std::atomic<int64_t>* current_sample = nullptr);

}  // namespace minidl::data::loader
