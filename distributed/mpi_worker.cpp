#include "minidl/distributed/mpi_worker.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <sstream>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/mpi_check.h"
#include "minidl/distributed/mpi_datatype.h"

namespace minidl::distributed::detail {

namespace {

using Clock = std::chrono::steady_clock;

// How long a worker spins before it sleeps between polls of a collective, how long it sleeps,
// and how long an idle worker waits for new work before it answers its peers again.
constexpr auto kSpinBeforeSleeping = std::chrono::microseconds(500);
constexpr auto kPollSleep = std::chrono::microseconds(50);
constexpr auto kIdlePoll = std::chrono::milliseconds(5);

}  // namespace

MpiWorker::MpiWorker(MPI_Comm comm, MPI_Comm control, int rank, int size,
                     ProcessGroupOptions options)
    : comm_(comm), rank_(rank), size_(size), options_(options), control_(control, rank, size) {
  thread_ = std::thread([this] { run_thread(); });
}

MpiWorker::~MpiWorker() { stop(); }

std::shared_ptr<Work> MpiWorker::enqueue(Collective collective) {
  collective.work = std::make_shared<MpiWork>();
  std::shared_ptr<MpiWork> work = collective.work;
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return std::make_shared<CompletedWork>(failure_);
    MINIDL_CHECK(!stopping_, describe(collective),
                 ": the mpi process group was shut down (distributed::finalize())");
    queue_.push_back(std::move(collective));
  }
  queue_changed_.notify_one();
  return work;
}

void MpiWorker::stop() {
  if (stopped_.exchange(true)) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queue_changed_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::string MpiWorker::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void MpiWorker::run_thread() {
  control_.open();
  while (true) {
    Collective collective;
    {
      std::unique_lock lock(mutex_);
      queue_changed_.wait_for(lock, kIdlePoll, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        if (stopping_) break;
        lock.unlock();
        control_.service(progress_);
        continue;
      }
      collective = std::move(queue_.front());
      queue_.pop_front();
    }
    run(std::move(collective));
  }
  leave();
}

void MpiWorker::run(Collective collective) {
  if (const std::string broken = failure(); !broken.empty()) {
    collective.work->complete(broken);
    return;
  }
  ++progress_.entered;
  progress_.current_kind = static_cast<int64_t>(collective.kind);
  std::string error;
  try {
    NoGradGuard no_grad;  // averaging divides in place
    execute(collective);
    ++progress_.completed;
  } catch (const std::exception& e) {
    error = e.what();
    abandoned_.push_back(collective);
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = error;
  }
  progress_.current_kind = kNotInCollective;
  if (!error.empty()) logger().error("{}", error);
  collective.work->complete(std::move(error));
}

void MpiWorker::execute(Collective& collective) {
  Tensor data = collective.data;
  const bool reduces = collective.kind == CollectiveKind::AllReduce ||
                       collective.kind == CollectiveKind::ReduceScatter;
  // f16 and bf16 are reduced in f32: MPI has no 16-bit float types.
  Tensor buffer = reduces && reduces_in_float32(data.dtype()) ? data.to(kFloat32) : data;
  Tensor input = collective.input;
  if (reduces && input.defined() && reduces_in_float32(input.dtype())) input = input.to(kFloat32);

  MPI_Request request = MPI_REQUEST_NULL;
  switch (collective.kind) {
    case CollectiveKind::AllReduce:
      MINIDL_MPI_CHECK(MPI_Iallreduce(
          MPI_IN_PLACE, buffer.data_ptr(), static_cast<int>(buffer.numel()),
          mpi_datatype(buffer.dtype()), mpi_op(collective.reduce_op), comm_, &request));
      break;
    case CollectiveKind::Broadcast:
      MINIDL_MPI_CHECK(MPI_Ibcast(buffer.data_ptr(), static_cast<int>(buffer.numel()),
                                  mpi_datatype(buffer.dtype()), collective.root, comm_, &request));
      break;
    case CollectiveKind::AllGather:
      MINIDL_MPI_CHECK(MPI_Iallgather(input.data_ptr(), static_cast<int>(input.numel()),
                                      mpi_datatype(input.dtype()), buffer.data_ptr(),
                                      static_cast<int>(input.numel()), mpi_datatype(buffer.dtype()),
                                      comm_, &request));
      break;
    case CollectiveKind::ReduceScatter:
      if (buffer.is_same(data) && reduces_in_float32(data.dtype()))
        buffer = empty(data.sizes(), kFloat32);
      MINIDL_MPI_CHECK(MPI_Ireduce_scatter_block(
          input.data_ptr(), buffer.data_ptr(), static_cast<int>(buffer.numel()),
          mpi_datatype(buffer.dtype()), mpi_op(collective.reduce_op), comm_, &request));
      break;
    case CollectiveKind::Barrier: MINIDL_MPI_CHECK(MPI_Ibarrier(comm_, &request)); break;
  }
  wait_for(request, collective);

  if (reduces && collective.reduce_op == ReduceOp::Average) buffer.div_(static_cast<double>(size_));
  if (!buffer.is_same(data)) data.copy_(buffer);
}

// Polls `request` until it completes, a peer has left, or the deadline passes.
void MpiWorker::wait_for(MPI_Request& request, const Collective& collective) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + options_.timeout();
  while (true) {
    int done = 0;
    MINIDL_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    control_.service(progress_);
    for (const auto& [peer, completed_by_peer] : control_.left_after())
      MINIDL_CHECK(completed_by_peer >= progress_.entered, failure_header(collective), ": rank ",
                   peer, " has left the job (it finalized, or exited, after completing ",
                   completed_by_peer, " collectives), so this one can never complete");
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      const auto seconds = std::chrono::duration<double>(options_.timeout()).count();
      MINIDL_CHECK(false, failure_header(collective), " timed out after ", seconds,
                   " s (MINIDL_COLLECTIVE_TIMEOUT_S); ",
                   diagnose_missing_ranks(control_, progress_));
    }
    if (now - start > kSpinBeforeSleeping)
      std::this_thread::sleep_for(kPollSleep);
    else
      std::this_thread::yield();
  }
}

std::string MpiWorker::failure_header(const Collective& collective) const {
  std::ostringstream out;
  out << "rank " << rank_ << ": " << describe(collective) << " (collective #" << progress_.entered
      << " of the mpi process group)";
  return out.str();
}

// Nothing thrown here leaves the thread: a failure to leave cleanly is logged.
void MpiWorker::leave() {
  try {
    control_.announce_leaving(progress_.completed);
    if (failure().empty()) {
      const std::vector<int> stayed =
          control_.wait_for_peers_to_leave(progress_, options_.timeout());
      if (!stayed.empty()) {
        std::ostringstream missing;
        for (int peer : stayed) missing << " " << peer;
        std::lock_guard lock(mutex_);
        failure_ = "rank " + std::to_string(rank_) + ": finalize: waited " +
                   std::to_string(std::chrono::duration<double>(options_.timeout()).count()) +
                   " s for every rank to finish, and these did not:" + missing.str();
      }
    }
    control_.close(progress_);
  } catch (const std::exception& e) {
    logger().warn("rank {}: mpi process group: while leaving: {}", rank_, e.what());
  }
}

}  // namespace minidl::distributed::detail
