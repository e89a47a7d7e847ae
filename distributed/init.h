#pragma once
// Joining the job: rank, world size and local rank, the device, and the default process
// groups.
//
// Launch one process per GPU (or per CPU rank) with mpirun:
//
//   mpirun -np 4 ./train_cifar10 ...          (as root add --allow-run-as-root, or set
//                                              OMPI_ALLOW_RUN_AS_ROOT=1 and
//                                              OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
//
// init() sees mpirun's environment (OMPI_COMM_WORLD_SIZE, ...) and then initialises MPI. A
// program started without mpirun is world size 1 and never touches MPI, so it runs on a
// machine without MPI's runtime. Under MPI, init() asks for MPI_THREAD_MULTIPLE: each MPI
// process group makes its MPI calls from its own worker thread (Note [One MPI thread per
// group] in mpi_process_group.h).
//
// Faults (Note [Faults], init.cpp): when a rank fails, mpirun ends the other ranks; a failed
// collective, a timeout, or a peer that left, is a minidl::Error on every rank that waits for
// it, naming the ranks missing. finalize() after such an error calls MPI_Abort, the only place
// minidl does, so that mpirun ends every rank instead of leaving them waiting.
#include <chrono>
#include <memory>

#include "minidl/core/device.h"
#include "minidl/distributed/process_group.h"

namespace minidl::distributed {

struct InitOptions {
  InitOptions() = default;
  // The timeout of the default process groups' collectives (default_collective_timeout():
  // MINIDL_COLLECTIVE_TIMEOUT_S, else 300 s).
  InitOptions& timeout(std::chrono::milliseconds value) {
    timeout_ = value;
    return *this;
  }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Under mpirun, a SIGTERM handler that prints which ranks on this host were already gone
  // when mpirun ended this one (mpirun sends SIGTERM to every rank when one fails), then dies
  // of SIGTERM as before.
  InitOptions& report_termination(bool value) {
    report_termination_ = value;
    return *this;
  }
  bool report_termination() const { return report_termination_; }

 private:
  std::chrono::milliseconds timeout_ = default_collective_timeout();
  bool report_termination_ = true;
};

// Joins the job: reads rank, world size and local rank; initialises MPI under mpirun; picks
// CUDA device local_rank % device_count when there is a GPU; puts the rank in every log line
// (world size > 1); rank 0 logs the layout once. Registers finalize() to run at exit. Calling
// it again does nothing. Throws when launched by mpirun with several processes and minidl was
// built without MPI.
void init(const InitOptions& options = {});
bool is_initialized();

// The calls below need init() first; they throw otherwise.
int rank();
int world_size();
int local_rank();  // the rank among the processes on this host

// The group for collectives on tensors of `device`'s type, shared by everyone who asks:
//   CPU tensors: MpiProcessGroup (world size 1: SingleProcessGroup);
//   CUDA tensors: NcclProcessGroup, created on the first call (a collective call: every rank
//   makes it), or MpiProcessGroup with host staging when minidl was built without NCCL.
std::shared_ptr<ProcessGroup> default_process_group(Device device = Device(kCPU));

// Leaves the job: destroys the default groups, waits until every peer has left as well, and
// finalises MPI. When a collective has failed, or a peer did not leave within the collective
// timeout (the job cannot end cleanly), it calls MPI_Abort instead, so mpirun ends every rank.
// Idempotent; also runs at exit (so a rank that calls exit() mid-training tells its peers).
void finalize();

}  // namespace minidl::distributed
