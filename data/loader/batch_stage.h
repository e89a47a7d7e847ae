#pragma once
// The DataLoader is a short pipeline of stages, each handing batches of one epoch, in order, to
// the next (Flashlight's "datasets compose", applied to batches):
//
//   source:   InlineStage (builds batches in the calling thread)
//             | WorkerStage (worker threads build them ahead)
//             | ResidentStage (gathers them from the dataset uploaded to the device)
//   then:     DeviceCopyStage (host batch -> CUDA device, on the copy stream), for CUDA targets
//   then:     AugmentStage (crop, flip, normalise on the batch's device), when asked for
//
// Stages are used from the thread that iterates the loader.
#include <optional>

#include "minidl/data/batch.h"

namespace minidl::data::loader {

class BatchStage {
 public:
  virtual ~BatchStage() = default;
  // The next batch of the epoch; nullopt after the last. Throws what producing it threw.
  virtual std::optional<Batch> next() = 0;
  // True when next() would return at once, because its batch (or the end, or an error) is
  // already waiting; false when it would wait, or do the work itself.
  virtual bool ready() const = 0;
};

}  // namespace minidl::data::loader
