// What minidl does without MPI. CMake builds this file instead of distributed/mpi_*.cpp when it
// finds no MPI: distributed::init() under mpirun runs a job of one process as world size 1 and
// refuses a larger one, and MpiProcessGroup::create_world throws, saying what to install. So no
// process uses MPI and no MpiProcessGroup exists: the members below that only such a process or
// group reaches are never called.
#include <cstdlib>

#include "minidl/core/error.h"
#include "minidl/distributed/launcher_environment.h"
#include "minidl/distributed/mpi_job.h"
#include "minidl/distributed/mpi_process_group.h"

namespace minidl::distributed {

// ---- distributed::init() and finalize() (mpi_job.h) ----

std::optional<detail::MpiPlacement> detail::join_mpi_job() {
  const int size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
  MINIDL_CHECK(size <= 1, "distributed::init: launched by mpirun with ", size,
               " processes, but minidl was built without MPI (install libopenmpi-dev and ",
               "configure again)");
  return std::nullopt;
}

std::vector<detail::RankInfo> detail::gather_rank_info(int) {
  MINIDL_INTERNAL_ASSERT(false, "gather_rank_info: minidl was built without MPI");
  return {};
}

void detail::abort_mpi_job(int rank, const std::string& reason) {
  MINIDL_INTERNAL_ASSERT(false, "abort_mpi_job: minidl was built without MPI (rank ", rank,
                         ", after: ", reason, ")");
  std::abort();
}

void detail::finalize_mpi() {}

// ---- MpiProcessGroup ----

struct MpiProcessGroup::Impl {};

std::shared_ptr<MpiProcessGroup> MpiProcessGroup::create_world(ProcessGroupOptions) {
  MINIDL_CHECK(false, "MpiProcessGroup::create_world: minidl was built without MPI (install ",
               "libopenmpi-dev and configure again)");
  return nullptr;
}

MpiProcessGroup::MpiProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MpiProcessGroup::~MpiProcessGroup() = default;
void MpiProcessGroup::shutdown() {}
int MpiProcessGroup::rank() const { return 0; }
int MpiProcessGroup::size() const { return 1; }
std::string MpiProcessGroup::failure() const { return {}; }

namespace {
std::shared_ptr<Work> built_without_mpi() {
  MINIDL_CHECK(false, "MpiProcessGroup: minidl was built without MPI");
  return nullptr;
}
}  // namespace

std::shared_ptr<Work> MpiProcessGroup::all_reduce_async(const Tensor&, ReduceOp) {
  return built_without_mpi();
}
std::shared_ptr<Work> MpiProcessGroup::broadcast_async(const Tensor&, int) {
  return built_without_mpi();
}
std::shared_ptr<Work> MpiProcessGroup::all_gather_async(const Tensor&, const Tensor&) {
  return built_without_mpi();
}
std::shared_ptr<Work> MpiProcessGroup::reduce_scatter_async(const Tensor&, const Tensor&,
                                                            ReduceOp) {
  return built_without_mpi();
}
std::shared_ptr<Work> MpiProcessGroup::barrier_async() { return built_without_mpi(); }

}  // namespace minidl::distributed
