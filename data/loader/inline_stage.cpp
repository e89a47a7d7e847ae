#include "minidl/data/loader/inline_stage.h"

#include "minidl/data/loader/host_batch.h"

namespace minidl::data::loader {

InlineStage::InlineStage(std::shared_ptr<const Dataset> dataset,
                         std::shared_ptr<const EpochPlan> plan, bool pin_memory)
    : dataset_(std::move(dataset)),
      plan_(std::move(plan)),
      pin_memory_(pin_memory),
      next_batch_(plan_->first_batch()) {}

std::optional<Batch> InlineStage::next() {
  if (next_batch_ >= plan_->num_batches()) return std::nullopt;
  const int64_t k = next_batch_++;
  return build_host_batch(*dataset_, {plan_->batch(k), plan_->epoch(), k, pin_memory_});
}

// Only the end is waiting; every batch is work still to do.
bool InlineStage::ready() const { return next_batch_ >= plan_->num_batches(); }

}  // namespace minidl::data::loader
