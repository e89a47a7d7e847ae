#include "minidl/distributed/init.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "minidl/core/cuda/cuda.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/mpi_process_group.h"
#include "minidl/distributed/nccl_process_group.h"
#include "minidl/distributed/single_process_group.h"
#include "minidl/distributed/termination_report.h"

#if MINIDL_WITH_MPI
#include "minidl/distributed/mpi_check.h"
#endif

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

// How long a rank whose collective failed waits before it ends the job (finalize()).
constexpr auto kAbortGrace = std::chrono::seconds(1);

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

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int env_int(const char* name, int fallback) {
  const char* value = env(name);
  if (value == nullptr) return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  MINIDL_CHECK(end != value && *end == '\0' && parsed >= 0, "distributed::init: expected ",
               name, " to be a non-negative integer, got \"", value, "\"");
  return static_cast<int>(parsed);
}

// mpirun (OpenMPI), or another PMI launcher, started this process.
bool launched_by_mpirun() {
  return env("OMPI_COMM_WORLD_SIZE") != nullptr || env("PMIX_RANK") != nullptr ||
         env("PMI_SIZE") != nullptr;
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

#if MINIDL_WITH_MPI

// What every rank tells the others at start: for the layout line and the SIGTERM report.
struct RankInfo {
  int64_t pid = 0;
  int32_t local_rank = 0;
  int32_t device = -1;
  char host[64] = {};
};

std::vector<RankInfo> gather_rank_info(int local_rank) {
  RankInfo mine;
  mine.pid = getpid();
  mine.local_rank = local_rank;
  mine.device = cuda::is_available() ? cuda::current_device() : -1;
  gethostname(mine.host, sizeof mine.host - 1);
  int size = 1;
  MINIDL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<RankInfo> all(static_cast<size_t>(size));
  MINIDL_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine,
                                 MPI_BYTE, MPI_COMM_WORLD));
  return all;
}

void init_mpi(DistributedState& s) {
  int already = 0;
  MPI_Initialized(&already);
  int provided = 0;
  if (already) {
    MPI_Query_thread(&provided);
  } else {
    // Each MPI process group calls MPI from its worker thread, and the NCCL watchdog from its
    // own, while the main thread may create a group: MPI_THREAD_MULTIPLE.
    MINIDL_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    s.mpi_initialized_here = true;
  }
  MINIDL_CHECK(provided >= MPI_THREAD_SERIALIZED, "distributed::init: MPI provides thread ",
               "level ", provided, ", minidl needs at least MPI_THREAD_SERIALIZED (",
               MPI_THREAD_SERIALIZED, "), and asks for MPI_THREAD_MULTIPLE (",
               MPI_THREAD_MULTIPLE, ")");
  if (provided < MPI_THREAD_MULTIPLE)
    logger().warn("distributed::init: MPI provides MPI_THREAD_SERIALIZED only; use one MPI "
                  "process group");
  MINIDL_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MINIDL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &s.rank));
  MINIDL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &s.world_size));
  if (env("OMPI_COMM_WORLD_LOCAL_RANK") != nullptr) {
    s.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  } else {
    MPI_Comm host_comm;
    MINIDL_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s.rank,
                                         MPI_INFO_NULL, &host_comm));
    MINIDL_MPI_CHECK(MPI_Comm_rank(host_comm, &s.local_rank));
    MPI_Comm_free(&host_comm);
  }
  choose_device(s.local_rank);
  const std::vector<RankInfo> ranks = gather_rank_info(s.local_rank);

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
      layout << (r ? "; " : "") << "rank " << r << ": " << ranks[r].host << " pid "
             << ranks[r].pid << " local rank " << ranks[r].local_rank << " "
             << (ranks[r].device >= 0 ? "cuda:" + std::to_string(ranks[r].device) : "cpu");
    logger().info("distributed: world size {}, mpi (collective timeout {} s): {}",
                  s.world_size, s.options.timeout().count() / 1000.0, layout.str());
  }
  s.mpi_group = MpiProcessGroup::create_world(ProcessGroupOptions().timeout(s.options.timeout()));
  s.cpu_group = s.mpi_group;
  s.uses_mpi = true;
}

// The fault path, the only place minidl calls MPI_Abort: a collective failed and is still
// pending inside MPI, or a peer never finished, so MPI_Finalize could wait forever. MPI_Abort
// makes mpirun end every rank. The pause lets the other ranks, which usually fail at the same
// moment, report what they saw first.
[[noreturn]] void abort_job(int rank, const std::string& reason) {
  logger().critical("rank {}: calling MPI_Abort so that mpirun ends every rank, after: {}", rank,
                    reason);
  logger().flush();
  std::this_thread::sleep_for(kAbortGrace);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

#endif  // MINIDL_WITH_MPI

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
  if (launched_by_mpirun()) {
#if MINIDL_WITH_MPI
    init_mpi(s);
#else
    const int size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
    MINIDL_CHECK(size <= 1, "distributed::init: launched by mpirun with ", size,
                 " processes, but minidl was built without MPI (install libopenmpi-dev and ",
                 "configure again)");
#endif
  }
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
  if (!s.cuda_group) {
#if MINIDL_WITH_NCCL
    s.cuda_group = NcclProcessGroup::create(*s.cpu_group, device.index,
                                            ProcessGroupOptions().timeout(s.options.timeout()));
#else
    logger().warn("distributed: minidl was built without NCCL; CUDA tensors are reduced over "
                  "MPI through host memory (slow)");
    s.cuda_group = s.cpu_group;
#endif
  }
  return s.cuda_group;
}

void finalize() {
  DistributedState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized || s.finalized) return;
  s.finalized = true;
  std::string failure = s.cpu_group ? s.cpu_group->failure() : std::string();
  if (failure.empty() && s.cuda_group) failure = s.cuda_group->failure();
#if MINIDL_WITH_MPI
  if (s.uses_mpi && !failure.empty()) abort_job(s.rank, failure);
#endif
  s.cuda_group.reset();
  if (s.mpi_group) {
    // Waits until every peer has left too (or has failed): OpenMPI 4.1's mpirun can hang or
    // crash when a rank sits in MPI_Finalize while others end abnormally.
    s.mpi_group->shutdown();
#if MINIDL_WITH_MPI
    if (const std::string unclean = s.mpi_group->failure(); !unclean.empty())
      abort_job(s.rank, unclean);
#endif
  }
  s.mpi_group.reset();
  s.cpu_group.reset();
#if MINIDL_WITH_MPI
  if (s.mpi_initialized_here) MPI_Finalize();
#endif
  if (s.world_size > 1) set_log_rank(-1);
}

}  // namespace minidl::distributed
