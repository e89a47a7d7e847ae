#include "minidl/distributed/mpi_job.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/launcher_environment.h"
#include "minidl/distributed/mpi_check.h"

namespace minidl::distributed::detail {

namespace {

// How long a rank whose collective failed waits before it ends the job: the other ranks, which
// usually fail at the same moment, report what they saw first.
constexpr auto kAbortGrace = std::chrono::seconds(1);

}  // namespace

std::optional<MpiPlacement> join_mpi_job() {
  MpiPlacement placement;
  int already = 0;
  MPI_Initialized(&already);
  int provided = 0;
  if (already) {
    MPI_Query_thread(&provided);
  } else {
    // Each MPI process group calls MPI from its worker thread, and the NCCL watchdog from its
    // own, while the main thread may create a group: MPI_THREAD_MULTIPLE.
    MINIDL_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    placement.initialized_here = true;
  }
  MINIDL_CHECK(provided >= MPI_THREAD_SERIALIZED, "distributed::init: MPI provides thread ",
               "level ", provided, ", minidl needs at least MPI_THREAD_SERIALIZED (",
               MPI_THREAD_SERIALIZED, "), and asks for MPI_THREAD_MULTIPLE (", MPI_THREAD_MULTIPLE,
               ")");
  if (provided < MPI_THREAD_MULTIPLE)
    logger().warn(
        "distributed::init: MPI provides MPI_THREAD_SERIALIZED only; use one MPI "
        "process group");
  MINIDL_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MINIDL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &placement.rank));
  MINIDL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &placement.world_size));
  if (env("OMPI_COMM_WORLD_LOCAL_RANK") != nullptr) {
    placement.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  } else {
    MPI_Comm host_comm;
    MINIDL_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, placement.rank,
                                         MPI_INFO_NULL, &host_comm));
    MINIDL_MPI_CHECK(MPI_Comm_rank(host_comm, &placement.local_rank));
    MPI_Comm_free(&host_comm);
  }
  return placement;
}

std::vector<RankInfo> gather_rank_info(int local_rank) {
  RankInfo mine;
  mine.pid = getpid();
  mine.local_rank = local_rank;
  mine.device = cuda::is_available() ? cuda::current_device() : -1;
  gethostname(mine.host, sizeof mine.host - 1);
  int size = 1;
  MINIDL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<RankInfo> all(static_cast<size_t>(size));
  MINIDL_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                                 MPI_COMM_WORLD));
  return all;
}

void abort_mpi_job(int rank, const std::string& reason) {
  logger().critical("rank {}: calling MPI_Abort so that mpirun ends every rank, after: {}", rank,
                    reason);
  logger().flush();
  std::this_thread::sleep_for(kAbortGrace);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

void finalize_mpi() { MPI_Finalize(); }

}  // namespace minidl::distributed::detail
