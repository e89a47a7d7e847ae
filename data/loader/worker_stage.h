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
//   - With pinned batches and a GPU, the pinned pool's cudaHostAlloc and event queries run on
//     the workers' threads. A thread that never selected a device would create a CUDA context
//     on GPU 0 for them (in every rank, under mpirun), so each worker first selects the device
//     of the thread that made the stage (the rank's own GPU once distributed::init() has run),
//     as PyTorch's pin-memory thread does.
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "minidl/data/datasets/dataset.h"
#include "minidl/data/loader/batch_stage.h"
#include "minidl/data/loader/epoch_plan.h"

namespace minidl::data::loader {

struct WorkerStageOptions {
  int num_workers = 1;
  int64_t prefetch_depth = 2;
  bool pin_memory = true;
  std::chrono::milliseconds timeout{0};  // zero: wait forever
};

// The CUDA device a worker selects before it builds a batch (see the Note), or none when the
// workers do not touch a GPU: batches not pinned, or the pinned pool without a GPU
// (`page_locked` false).
std::optional<int> worker_cuda_device(bool pin_memory, bool page_locked, int caller_device);

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
