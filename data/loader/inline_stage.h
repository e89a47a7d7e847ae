#pragma once
// Builds each batch in the calling thread when it is asked for (num_workers = 0). With a CUDA
// target this still overlaps: the host builds batch k+1 while the device runs step k.
#include <memory>

#include "minidl/data/datasets/dataset.h"
#include "minidl/data/loader/batch_stage.h"
#include "minidl/data/loader/epoch_plan.h"

namespace minidl::data::loader {

class InlineStage final : public BatchStage {
 public:
  InlineStage(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const EpochPlan> plan,
              bool pin_memory);
  std::optional<Batch> next() override;
  bool ready() const override;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const EpochPlan> plan_;
  bool pin_memory_;
  int64_t next_batch_;
};

}  // namespace minidl::data::loader
