#pragma once
// Crops, flips and normalises each batch where it lives (data/transforms/batch_augment.h), keyed by
// its samples' dataset indices and epoch.
#include <memory>

#include "minidl/data/loader/batch_stage.h"
#include "minidl/data/transforms/batch_augment.h"

namespace minidl::data::loader {

class AugmentStage final : public BatchStage {
 public:
  AugmentStage(std::unique_ptr<BatchStage> upstream, AugmentOptions options);

  std::optional<Batch> next() override;
  bool ready() const override { return upstream_->ready(); }

 private:
  std::unique_ptr<BatchStage> upstream_;
  AugmentOptions options_;
};

}  // namespace minidl::data::loader
