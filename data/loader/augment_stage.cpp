#include "minidl/data/loader/augment_stage.h"

namespace minidl::data::loader {

AugmentStage::AugmentStage(std::unique_ptr<BatchStage> upstream, AugmentOptions options)
    : upstream_(std::move(upstream)), options_(std::move(options)) {}

std::optional<Batch> AugmentStage::next() {
  std::optional<Batch> batch = upstream_->next();
  if (batch) batch->images = augment_batch(batch->images, batch->indices, batch->epoch, options_);
  return batch;
}

}  // namespace minidl::data::loader
