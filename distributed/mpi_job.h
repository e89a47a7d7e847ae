#pragma once
// MPI as distributed::init() and finalize() use it: joining the job that mpirun started, telling
// the ranks about each other, ending every rank after a fault, and MPI_Finalize (Note [Faults],
// init.cpp). CMake builds these from mpi_job.cpp when it finds MPI, else from without_mpi.cpp,
// where a job of one process runs without MPI and a larger one is refused. No <mpi.h> here:
// init.cpp includes this header in every build.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minidl::distributed::detail {

// Where this process sits in the job.
struct MpiPlacement {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;             // among the ranks on this host
  bool initialized_here = false;  // join_mpi_job() initialised MPI, so finalize_mpi() ends it
};

// Initialises MPI (MPI_THREAD_MULTIPLE) unless it is already, makes MPI_COMM_WORLD return
// errors instead of aborting, and says where this rank sits. Without MPI: nullopt for a job of
// one process, which then runs as world size 1, and an error for a larger job.
std::optional<MpiPlacement> join_mpi_job();

// What every rank tells the others at start: for the layout line and the SIGTERM report.
struct RankInfo {
  int64_t pid = 0;
  int32_t local_rank = 0;
  int32_t device = -1;  // the current CUDA device, or -1
  char host[64] = {};
};

// Every rank's RankInfo, in rank order. Collective: every rank calls it, after choosing its
// device.
std::vector<RankInfo> gather_rank_info(int local_rank);

// The fault path, the only place minidl calls MPI_Abort: a collective failed and is still
// pending inside MPI, or a peer never finished, so MPI_Finalize could wait forever. MPI_Abort
// makes mpirun end every rank.
[[noreturn]] void abort_mpi_job(int rank, const std::string& reason);

// MPI_Finalize, for a process whose MPI join_mpi_job() initialised.
void finalize_mpi();

}  // namespace minidl::distributed::detail
