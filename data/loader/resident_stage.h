#pragma once
// The device-resident mode: the whole dataset lives on the target device (uploaded once per
// loader), and each batch is gathered there from the epoch's order, which is uploaded once per
// epoch. No worker threads and no per-batch host work: a batch costs two small kernel launches
// on the current stream.
#include <memory>

#include "minidl/core/device.h"
#include "minidl/core/tensor.h"
#include "minidl/data/datasets/dataset.h"
#include "minidl/data/loader/batch_stage.h"
#include "minidl/data/loader/epoch_plan.h"

namespace minidl::data::loader {

// A dataset's images [N, C, H, W] and labels int64 [N] on one device.
struct ResidentDataset {
  Tensor images;
  Tensor labels;
};

// Reads every sample of `dataset` (epoch 0; an InMemoryDataset's tensors are used directly) and
// uploads them to `device`, waiting for the upload to finish: this happens once, off the hot
// path, and later batches may then be gathered on any stream.
std::shared_ptr<const ResidentDataset> upload_dataset(const Dataset& dataset, Device device);

class ResidentStage final : public BatchStage {
 public:
  // Uploads the epoch's order on the current stream, through pinned memory.
  ResidentStage(std::shared_ptr<const ResidentDataset> resident,
                std::shared_ptr<const EpochPlan> plan, Device device);

  std::optional<Batch> next() override;
  bool ready() const override { return true; }  // nothing to wait for

 private:
  std::shared_ptr<const ResidentDataset> resident_;
  std::shared_ptr<const EpochPlan> plan_;
  Tensor order_;  // int64 [epoch length] on the device
  int64_t next_batch_;
};

}  // namespace minidl::data::loader
