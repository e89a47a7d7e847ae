#include "minidl/data/loader/worker_stage.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <string>

#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/data/loader/host_batch.h"

namespace minidl::data::loader {

namespace {

// A batch as a worker left it: built, or failed with a message.
struct FinishedBatch {
  std::optional<Batch> batch;
  std::string error;
};

struct WorkerStatus {
  int64_t batch = -1;  // the batch being built, -1 when none
  bool exited = false;
};

}  // namespace

struct WorkerStage::SharedState {
  SharedState(std::shared_ptr<const Dataset> dataset_, std::shared_ptr<const EpochPlan> plan_,
              const WorkerStageOptions& options_)
      : dataset(std::move(dataset_)),
        plan(std::move(plan_)),
        options(options_),
        cuda_device(worker_cuda_device(options_.pin_memory, cuda::pinned_memory_is_page_locked(),
                                       cuda::current_device())),
        workers(static_cast<size_t>(options_.num_workers)),
        current_sample(static_cast<size_t>(options_.num_workers)) {}

  const std::shared_ptr<const Dataset> dataset;
  const std::shared_ptr<const EpochPlan> plan;
  const WorkerStageOptions options;
  const std::optional<int> cuda_device;  // what each worker selects first (see the Note)
  std::atomic<bool> stopping{false};     // also read by build_host_batch between samples

  std::mutex mutex;                        // guards everything below but current_sample
  std::condition_variable work_available;  // for workers: a batch may be claimed, or stop
  std::condition_variable batch_finished;  // for the caller: a batch was finished
  std::condition_variable worker_exited;   // for shutdown
  int64_t next_to_claim = plan->first_batch();
  int64_t next_to_deliver = plan->first_batch();
  std::map<int64_t, FinishedBatch> finished;
  std::vector<WorkerStatus> workers;
  // Per worker: the sample it is reading, -1 before its batch's first read (while it allocates
  // the batch, pinned when pin_memory is on, and selects its GPU).
  std::vector<std::atomic<int64_t>> current_sample;

  // What worker w is doing, for the messages about a batch that is late.
  std::string activity(size_t w) const {
    const int64_t sample = current_sample[w].load(std::memory_order_relaxed);
    if (sample < 0)
      return detail::concat(
          "worker ", w, " has not read a sample of its batch yet (it is allocating ",
          options.pin_memory ? "the batch's pinned memory" : "the batch", " or selecting its GPU)");
    return detail::concat("worker ", w, " is stuck reading sample ", sample);
  }

  bool may_claim() const {
    return next_to_claim < plan->num_batches() &&
           next_to_claim < next_to_deliver + options.prefetch_depth;
  }
};

namespace {

using SharedState = WorkerStage::SharedState;

void run_worker(const std::shared_ptr<SharedState>& state, int worker) {
  bool device_selected = false;
  try {
    for (;;) {
      int64_t k = 0;
      {
        std::unique_lock lock(state->mutex);
        state->work_available.wait(lock, [&] {
          return state->stopping || state->next_to_claim >= state->plan->num_batches() ||
                 state->may_claim();
        });
        if (state->stopping || state->next_to_claim >= state->plan->num_batches()) break;
        k = state->next_to_claim++;
        state->workers[static_cast<size_t>(worker)].batch = k;
        state->current_sample[static_cast<size_t>(worker)].store(-1, std::memory_order_relaxed);
      }
      FinishedBatch result;
      try {
        // Here rather than at the thread's start, so that a failure reaches the caller with
        // the batch, as a dataset's error does.
        if (state->cuda_device && !device_selected) {
          cuda::set_device(*state->cuda_device);
          device_selected = true;
        }
        result.batch = build_host_batch(
            *state->dataset,
            {state->plan->batch(k), state->plan->epoch(), k, state->options.pin_memory},
            &state->stopping, &state->current_sample[static_cast<size_t>(worker)]);
        if (!result.batch) break;  // stopped half-way
      } catch (const std::exception& error) {
        result.error = detail::concat("DataLoader worker ", worker, ": ", error.what());
      } catch (...) {
        result.error = detail::concat("DataLoader worker ", worker, ": building batch ", k,
                                      " threw an exception that is not a std::exception");
      }
      {
        std::lock_guard lock(state->mutex);
        state->finished.emplace(k, std::move(result));
        state->workers[static_cast<size_t>(worker)].batch = -1;
      }
      state->batch_finished.notify_all();
    }
  } catch (const std::exception& error) {
    // Only the bookkeeping above can get here (an allocation failing); the caller then sees
    // the batch as not ready and reports a timeout.
    logger().error("DataLoader worker {} stopped: {}", worker, error.what());
  }
  {
    std::lock_guard lock(state->mutex);
    state->workers[static_cast<size_t>(worker)].exited = true;
  }
  state->worker_exited.notify_all();
}

}  // namespace

std::optional<int> worker_cuda_device(bool pin_memory, bool page_locked, int caller_device) {
  if (!pin_memory || !page_locked) return std::nullopt;
  return caller_device;
}

WorkerStage::WorkerStage(std::shared_ptr<const Dataset> dataset,
                         std::shared_ptr<const EpochPlan> plan, const WorkerStageOptions& options)
    : state_(std::make_shared<SharedState>(std::move(dataset), std::move(plan), options)) {
  MINIDL_INTERNAL_ASSERT(options.num_workers >= 1 && options.prefetch_depth >= 1,
                         "WorkerStage needs a worker and a prefetch depth");
  threads_.reserve(static_cast<size_t>(options.num_workers));
  try {
    for (int w = 0; w < options.num_workers; ++w) threads_.emplace_back(run_worker, state_, w);
  } catch (...) {
    {
      std::lock_guard lock(state_->mutex);  // workers never started have nothing to wait for
      for (size_t w = threads_.size(); w < state_->workers.size(); ++w)
        state_->workers[w].exited = true;
    }
    shut_down();
    throw;
  }
}

WorkerStage::~WorkerStage() { shut_down(); }

bool WorkerStage::ready() const {
  std::lock_guard lock(state_->mutex);
  return state_->next_to_deliver >= state_->plan->num_batches() ||
         state_->finished.count(state_->next_to_deliver) > 0;
}

std::optional<Batch> WorkerStage::next() {
  SharedState& state = *state_;
  std::unique_lock lock(state.mutex);
  const int64_t k = state.next_to_deliver;
  if (k >= state.plan->num_batches()) return std::nullopt;
  const auto is_finished = [&] { return state.finished.count(k) > 0; };
  const std::chrono::milliseconds timeout = state.options.timeout;
  if (timeout.count() > 0) {
    if (!state.batch_finished.wait_for(lock, timeout, is_finished)) {
      std::string culprit = "no worker has started it";
      for (size_t w = 0; w < state.workers.size(); ++w)
        if (state.workers[w].batch == k) culprit = state.activity(w);
      MINIDL_CHECK(false, "DataLoader: batch ", k, " of epoch ", state.plan->epoch(),
                   " was not ready after ", timeout.count(), " ms (DataLoaderOptions::timeout); ",
                   culprit);
    }
  } else {
    state.batch_finished.wait(lock, is_finished);
  }
  auto node = state.finished.extract(k);
  ++state.next_to_deliver;
  lock.unlock();
  state.work_available.notify_all();
  FinishedBatch& result = node.mapped();
  if (!result.error.empty()) throw Error(result.error);
  return std::move(result.batch);
}

void WorkerStage::shut_down() noexcept {
  if (!state_) return;
  SharedState& state = *state_;
  std::vector<bool> exited;
  std::map<int64_t, FinishedBatch> unused;  // released outside the lock
  {
    std::unique_lock lock(state.mutex);
    state.stopping = true;
    unused.swap(state.finished);
    state.work_available.notify_all();
    const auto all_exited = [&] {
      for (const WorkerStatus& worker : state.workers)
        if (!worker.exited) return false;
      return true;
    };
    if (state.options.timeout.count() > 0)
      state.worker_exited.wait_for(lock, state.options.timeout, all_exited);
    else
      state.worker_exited.wait(lock, all_exited);
    for (const WorkerStatus& worker : state.workers) exited.push_back(worker.exited);
  }
  for (size_t w = 0; w < threads_.size(); ++w) {
    if (!threads_[w].joinable()) continue;
    if (exited[w]) {
      threads_[w].join();
    } else {
      logger().warn(
          "DataLoader: {} ms after shutdown began, {}; leaving it behind (detached) so that "
          "shutdown does not hang. It stops on its own once that returns.",
          state.options.timeout.count(), state.activity(w));
      threads_[w].detach();
    }
  }
  threads_.clear();
}

}  // namespace minidl::data::loader
