#pragma once
// Worker threads that build whole batches ahead of the caller.
//
// Note [DataLoader workers]
//   - Workers claim batches in order (0, 1, 2, ...) from a shared counter, never more than
//     `prefetch_depth` beyond the batch the caller is waiting for, and each builds its batch
//     whole. Finished batches are kept by number and handed out in order, so batches arrive in
//     sampler order whatever the number of workers and whichever worker built which; and
//     since a sample's randomness depends on (seed, epoch, index) only, their contents do not
//     depend on the worker count either.
//   - An exception in a worker is kept with its batch; the caller rethrows it, with the
//     worker's message and the sample index, when it reaches that batch. Earlier batches are
//     delivered first.
//   - The caller waits at most `timeout` for the next batch; past that, it throws an error
//     naming the worker and the sample that worker has been reading.
//   - Shutdown (end of the epoch, leaving the loop early, an exception unwinding the loop, the
//     loader's destruction) sets a stop flag that workers check between samples, drops the
//     finished batches and joins the workers. A worker stuck inside a dataset read for longer
//     than `timeout` is detached and logged rather than waited for: it shares ownership of
//     everything it uses, so it finishes safely whenever its read returns.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "minidl/data/dataset.h"
#include "minidl/data/loader/batch_stage.h"
#include "minidl/data/loader/epoch_plan.h"

namespace minidl::data::loader {

struct WorkerStageOptions {
  int num_workers = 1;
  int64_t prefetch_depth = 2;
  bool pin_memory = true;
  std::chrono::milliseconds timeout{0};  // zero: wait forever
};

class WorkerStage final : public BatchStage {
 public:
  WorkerStage(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const EpochPlan> plan,
              const WorkerStageOptions& options);
  ~WorkerStage() override;  // shuts down; see the Note
  WorkerStage(const WorkerStage&) = delete;
  WorkerStage& operator=(const WorkerStage&) = delete;

  std::optional<Batch> next() override;
  bool ready() const override;

  struct SharedState;  // what the threads share with the stage (defined in worker_stage.cpp)

 private:
  void shut_down() noexcept;

  std::shared_ptr<SharedState> state_;
  std::vector<std::thread> threads_;
};

}  // namespace minidl::data::loader
