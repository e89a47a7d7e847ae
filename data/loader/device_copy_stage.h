#pragma once
// Copies host batches to a CUDA device on the loader's copy stream, and hands each over to the
// stream current at delivery (the compute stream) with an event: the compute stream waits on
// the device, the host never waits.
//
// Note [Overlapping batch copies]
//   When batch k is delivered and batch k+1 is already built (upstream ready()), the copy of
//   k+1 is queued at once, before the caller queues step k; so it runs on the copy stream while
//   step k computes. Otherwise k+1's copy is queued when it is asked for, which still overlaps
//   the tail of the previous step whenever the host is ahead of the device.
//   Lifetimes: device tensors are allocated on the copy stream, and record_stream() marks them
//   used by the compute stream, so the caching allocator reuses their memory only after the
//   compute stream is done with them. The host batch's pinned blocks are marked used by the
//   copy stream (ops/cuda/copy.cu does it), so the pinned pool recycles them only after the
//   copy has run.
#include <exception>
#include <memory>
#include <optional>

#include "minidl/core/cuda/stream.h"
#include "minidl/core/device.h"
#include "minidl/data/loader/batch_stage.h"

namespace minidl::data::loader {

class DeviceCopyStage final : public BatchStage {
 public:
  DeviceCopyStage(std::unique_ptr<BatchStage> upstream, Device device, cuda::Stream copy_stream);

  std::optional<Batch> next() override;
  bool ready() const override { return prefetched_.has_value() || upstream_->ready(); }

 private:
  // A batch whose copy is queued; or the end of the epoch; or what fetching it threw.
  struct InFlight {
    std::optional<Batch> batch;  // nullopt: the end
    std::shared_ptr<cuda::Event> copied;
    std::exception_ptr error;
  };
  InFlight fetch_and_copy();
  Batch copy_to_device(const Batch& host);

  std::unique_ptr<BatchStage> upstream_;
  Device device_;
  cuda::Stream copy_stream_;
  std::optional<InFlight> prefetched_;
};

}  // namespace minidl::data::loader
