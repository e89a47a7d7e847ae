#include "minidl/distributed/init.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "minidl/core/cuda/device.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/cuda_process_group.h"
#include "minidl/distributed/launcher_environment.h"
#include "minidl/distributed/mpi_job.h"
#include "minidl/distributed/mpi_process_group.h"
#include "minidl/distributed/single_process_group.h"
#include "minidl/distributed/termination_report.h"

// Note [Faults]
// What OpenMPI 4.1 does by itself, measured with a rank that fails in the middle of training
// (tests/distributed/mpi/run_fault_case.sh): when a rank exits without MPI_Finalize (exit 0,
// exit 1), aborts, or dies of SIGKILL or SIGTERM, mpirun sends SIGTERM to every other rank within
// about 1.5 s, prints which rank failed ("process rank 1 ... exited on signal 9", or "Process
// name: [[jobid,1],1] Exit code: 1"), and exits non-zero. What minidl adds:
//   - finalize() runs at exit, so a rank that calls exit() first tells its peers how many
//     collectives it completed (Note [Collective timeouts], mpi_process_group.h): a peer in a
//     later collective fails at once, naming it, and does not wait in MPI for a rank that is
//     finalising.
//   - A rank that waits in a collective some rank never calls (a desync) fails after the
//     timeout, naming the ranks that did not arrive, instead of hanging.
//   - finalize() after a failed collective calls MPI_Abort, so mpirun ends the whole job.
//   - finalize() calls MPI_Finalize only once every peer has left cleanly: with OpenMPI 4.1.4,
//     a rank waiting in MPI_Finalize while the others end abnormally made mpirun hang or crash
//     (segfault in PMIx_server_finalize) in 3 of 10 runs with 4 ranks.
//   - Survivors that mpirun ends say which ranks on their host were already gone
//     (termination_report.h).

namespace minidl::distributed {

namespace {

struct DistributedState {
  std::mutex mutex;
  bool initialized = false;
  bool finalized = false;
  bool uses_mpi = false;
  bool mpi_initialized_here = false;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  InitOptions options;
  std::shared_ptr<ProcessGroup> cpu_group;  // MpiProcessGroup, or SingleProcessGroup
  std::shared_ptr<MpiProcessGroup> mpi_group;
  std::shared_ptr<ProcessGroup> cuda_group;  // created on first use
};

DistributedState& state() {
  static DistributedState instance;
  return instance;
}

void finalize_at_exit() {
  try {
    finalize();
  } catch (const std::exception& e) {
    logger().error("distributed::finalize at exit: {}", e.what());
  }
}

std::string device_description() {
  if (!cuda::is_available()) return "cpu";
  return "cuda:" + std::to_string(cuda::current_device());
}

void choose_device(int local_rank) {
  if (!cuda::is_available()) return;
  cuda::set_device(local_rank % cuda::device_count());
}

// Joins the job that mpirun started; a build without MPI runs a job of one process as world
// size 1 (join_mpi_job() says nothing, and init() goes on without MPI).
void init_mpi(DistributedState& s) {
  const std::optional<detail::MpiPlacement> placement = detail::join_mpi_job();
  if (!placement) return;
  s.mpi_initialized_here = placement->initialized_here;
  s.rank = placement->rank;
  s.world_size = placement->world_size;
  s.local_rank = placement->local_rank;
  choose_device(s.local_rank);
  const std::vector<detail::RankInfo> ranks = detail::gather_rank_info(s.local_rank);

  if (s.options.report_termination()) {
    std::vector<PeerProcess> peers;
    for (size_t r = 0; r < ranks.size(); ++r)
      peers.push_back({.rank = static_cast<int>(r),
                       .pid = static_cast<pid_t>(ranks[r].pid),
                       .same_host = std::strcmp(ranks[r].host, ranks[s.rank].host) == 0});
    install_termination_report(s.rank, peers);
  }
  if (s.world_size > 1) set_log_rank(s.rank);
  if (s.rank == 0) {
    std::ostringstream layout;
    for (size_t r = 0; r < ranks.size(); ++r)
      layout << (r ? "; " : "") << "rank " << r << ": " << ranks[r].host << " pid " << ranks[r].pid
             << " local rank " << ranks[r].local_rank << " "
             << (ranks[r].device >= 0 ? "cuda:" + std::to_string(ranks[r].device) : "cpu");
    logger().info("distributed: world size {}, mpi (collective timeout {} s): {}", s.world_size,
                  s.options.timeout().count() / 1000.0, layout.str());
  }
  s.mpi_group = MpiProcessGroup::create_world(ProcessGroupOptions().timeout(s.options.timeout()));
  s.cpu_group = s.mpi_group;
  s.uses_mpi = true;
}

DistributedState& initialized_state(const char* what) {
  DistributedState& s = state();
  MINIDL_CHECK(s.initialized && !s.finalized, "distributed::", what,
               ": call distributed::init() first",
               s.finalized ? " (distributed::finalize() has run)" : "");
  return s;
}

}  // namespace

void init(const InitOptions& options) {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.initialized && !s.finalized) return;
  MINIDL_CHECK(!(s.finalized && s.uses_mpi), "distributed::init: MPI cannot be initialised ",
               "again after distributed::finalize()");
  s.finalized = false;
  s.uses_mpi = false;
  s.rank = 0;
  s.world_size = 1;
  s.local_rank = 0;
  s.options = options;
  if (detail::launched_by_mpirun()) init_mpi(s);
  if (!s.uses_mpi) {
    choose_device(0);
    s.cpu_group = std::make_shared<SingleProcessGroup>();
    logger().debug("distributed: world size 1 (no mpirun), device {}", device_description());
  }
  s.initialized = true;
  static std::once_flag at_exit_registered;
  std::call_once(at_exit_registered, [] { std::atexit(finalize_at_exit); });
}

bool is_initialized() {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  return s.initialized && !s.finalized;
}

int rank() {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  return initialized_state("rank").rank;
}

int world_size() {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  return initialized_state("world_size").world_size;
}

int local_rank() {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  return initialized_state("local_rank").local_rank;
}

std::shared_ptr<ProcessGroup> default_process_group(Device device) {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  initialized_state("default_process_group");
  if (device.is_cpu() || s.world_size == 1) return s.cpu_group;
  if (!s.cuda_group)
    s.cuda_group = detail::create_cuda_process_group(
        s.cpu_group, device.index, ProcessGroupOptions().timeout(s.options.timeout()));
  return s.cuda_group;
}

void finalize() {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized || s.finalized) return;
  s.finalized = true;
  std::string failure = s.cpu_group ? s.cpu_group->failure() : std::string();
  if (failure.empty() && s.cuda_group) failure = s.cuda_group->failure();
  if (s.uses_mpi && !failure.empty()) detail::abort_mpi_job(s.rank, failure);
  s.cuda_group.reset();
  if (s.mpi_group) {
    // Waits until every peer has left too (or has failed): OpenMPI 4.1's mpirun can hang or
    // crash when a rank sits in MPI_Finalize while others end abnormally.
    s.mpi_group->shutdown();
    if (const std::string unclean = s.mpi_group->failure(); !unclean.empty())
      detail::abort_mpi_job(s.rank, unclean);
  }
  s.mpi_group.reset();
  s.cpu_group.reset();
  if (s.mpi_initialized_here) detail::finalize_mpi();
  if (s.world_size > 1) set_log_rank(-1);
}

}  // namespace minidl::distributed
