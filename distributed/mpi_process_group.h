#pragma once
// MpiProcessGroup: collectives over MPI, for CPU tensors (CUDA tensors go through pinned host
// copies, for machines without NCCL; that path synchronises the host with the device).
//
// Note [One MPI thread per group]
// Each group owns a worker thread that makes all of the group's MPI calls: it starts the
// queued collectives one at a time, in the order they were queued (the same order on every
// rank), as non-blocking MPI calls, and polls them with MPI_Test. So collectives progress
// while the caller computes (backward overlaps DDP's all-reduces), and the worker can enforce
// a deadline and answer its peers while it waits.
//
// Note [Collective timeouts]
// A collective that has not finished `timeout` after the worker started it fails. Before it
// fails, the worker asks every peer, over a second communicator that only the workers use,
// which collective it is in; the error names the ranks that have not arrived (and what they
// are doing), the ranks that did not answer (dead, or stuck outside MPI), and the ranks that
// have left. A rank that finalizes (also at exit, even exit(0) in the middle of training)
// first tells its peers how many collectives it completed, so a peer waiting in a later one
// fails at once, naming it, instead of waiting for the timeout.
// A failed collective cannot be cancelled in MPI: the group is broken from then on, and
// distributed::finalize() then calls MPI_Abort so that mpirun ends every rank (see init.h).
#include <memory>

#include "minidl/distributed/process_group.h"

namespace minidl::distributed {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // A group of every rank of the job, over a duplicate of MPI_COMM_WORLD. Needs MPI
  // initialised (distributed::init() does it under mpirun). Collective: every rank calls it.
  static std::shared_ptr<MpiProcessGroup> create_world(ProcessGroupOptions options = {});
  ~MpiProcessGroup() override;  // shutdown()

  int rank() const override;
  int size() const override;
  std::string backend_name() const override { return "mpi"; }

  std::shared_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast_async(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather_async(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter_async(const Tensor& output, const Tensor& input,
                                             ReduceOp op) override;
  std::shared_ptr<Work> barrier_async() override;

  // Runs the collectives already queued, tells the peers this rank has left, waits (up to the
  // timeout) until every peer has said the same, and stops the worker. A peer that does not
  // leave in time breaks the group (failure() says so). Later collectives throw. Idempotent;
  // distributed::finalize() calls it.
  void shutdown();
  std::string failure() const override;

  struct Impl;  // mpi_process_group.cpp (without_mpi.cpp in a build without MPI)

 private:
  explicit MpiProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace minidl::distributed
