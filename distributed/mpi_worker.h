#pragma once
// The thread that makes every MPI call of one MpiProcessGroup, and the queue that feeds it
// (Note [One MPI thread per group] and Note [Collective timeouts], mpi_process_group.h). The
// worker starts the queued collectives one at a time, in queue order, polls each until it
// completes, a peer has left, or the timeout passes, and answers its peers meanwhile. The first
// collective that fails breaks the group: later ones fail at once with the same error.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "minidl/distributed/mpi_collective.h"
#include "minidl/distributed/mpi_control_channel.h"
#include "minidl/distributed/mpi_diagnosis.h"
#include "minidl/distributed/process_group.h"

namespace minidl::distributed::detail {

class MpiWorker {
 public:
  // `comm` carries the collectives and `control` the workers' own messages; this rank is `rank`
  // of `size` on both. The thread starts here.
  MpiWorker(MPI_Comm comm, MPI_Comm control, int rank, int size, ProcessGroupOptions options);
  ~MpiWorker();  // stop()
  MpiWorker(const MpiWorker&) = delete;
  MpiWorker& operator=(const MpiWorker&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Queues `collective` and returns its Work. A broken group returns its failure as a finished
  // Work; after stop(), throws.
  std::shared_ptr<Work> enqueue(Collective collective);
  // Runs what is queued, leaves (the leave protocol of MpiControlChannel), and joins the
  // thread. A peer that does not leave in time breaks the group. Idempotent.
  void stop();
  // The first error, or empty.
  std::string failure() const;

 private:
  void run_thread();
  void run(Collective collective);
  void execute(Collective& collective);
  void wait_for(MPI_Request& request, const Collective& collective);
  std::string failure_header(const Collective& collective) const;
  void leave();

  const MPI_Comm comm_;
  const int rank_;
  const int size_;
  const ProcessGroupOptions options_;

  // ---- shared between callers and the worker (under mutex_) ----
  mutable std::mutex mutex_;
  std::condition_variable queue_changed_;
  std::deque<Collective> queue_;
  bool stopping_ = false;
  std::string failure_;  // the first error; the group is broken once set
  std::atomic<bool> stopped_{false};
  std::thread thread_;

  // ---- the worker's own state ----
  CollectiveProgress progress_;
  MpiControlChannel control_;
  // Buffers of failed collectives that MPI may still write to: kept until the process ends.
  std::vector<Collective> abandoned_;
};

}  // namespace minidl::distributed::detail
