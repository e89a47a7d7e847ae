#pragma once
// One pass of a DataLoader over an epoch: the pipeline of stages and the batch the iterator
// points at. Shared by the iterators of the pass; the loader keeps a weak reference so that it
// can close the pass when it is destroyed or starts another.
#include <memory>
#include <optional>

#include "minidl/data/batch.h"
#include "minidl/data/loader/batch_stage.h"

namespace minidl::data::loader {

class EpochRun {
 public:
  explicit EpochRun(std::unique_ptr<BatchStage> pipeline) : pipeline_(std::move(pipeline)) {}

  // Moves to the next batch; false at the end of the epoch. Throws what the pipeline threw, or
  // an error when the pass was closed.
  bool advance();
  Batch& current();
  // Stops the pipeline (joining its workers) and releases its batches.
  void close() noexcept;

 private:
  std::unique_ptr<BatchStage> pipeline_;
  std::optional<Batch> current_;
  bool closed_ = false;
};

}  // namespace minidl::data::loader
