// What minidl does without NCCL. CMake builds this file instead of distributed/nccl_*.cpp when
// it finds no CUDA or no NCCL: NcclProcessGroup::create throws, saying what is missing, so no
// NcclProcessGroup exists and its other members are never called; CUDA tensors of a job of
// several ranks go through the CPU group, over MPI through host memory.
#include <spdlog/spdlog.h>

#include "minidl/core/cuda/build.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/cuda_process_group.h"
#include "minidl/distributed/nccl_process_group.h"

namespace minidl::distributed {

struct NcclProcessGroup::Impl {};

std::shared_ptr<NcclProcessGroup> NcclProcessGroup::create(ProcessGroup&, int,
                                                           ProcessGroupOptions) {
  MINIDL_CHECK(
      false, "NcclProcessGroup::create: minidl was built without ",
      cuda::kBuilt ? "NCCL (nccl.h and libnccl were not found next to the CUDA toolkit)" : "CUDA");
  return nullptr;
}

NcclProcessGroup::NcclProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclProcessGroup::~NcclProcessGroup() = default;
int NcclProcessGroup::rank() const { return 0; }
int NcclProcessGroup::size() const { return 1; }
std::string NcclProcessGroup::failure() const { return {}; }
std::shared_ptr<Work> NcclProcessGroup::all_reduce_async(const Tensor&, ReduceOp) {
  return nullptr;
}
std::shared_ptr<Work> NcclProcessGroup::broadcast_async(const Tensor&, int) { return nullptr; }
std::shared_ptr<Work> NcclProcessGroup::all_gather_async(const Tensor&, const Tensor&) {
  return nullptr;
}
std::shared_ptr<Work> NcclProcessGroup::reduce_scatter_async(const Tensor&, const Tensor&,
                                                             ReduceOp) {
  return nullptr;
}
std::shared_ptr<Work> NcclProcessGroup::barrier_async() { return nullptr; }

std::shared_ptr<ProcessGroup> detail::create_cuda_process_group(
    const std::shared_ptr<ProcessGroup>& cpu_group, int, ProcessGroupOptions) {
  logger().warn(
      "distributed: minidl was built without NCCL; CUDA tensors are reduced over "
      "MPI through host memory (slow)");
  return cpu_group;
}

}  // namespace minidl::distributed
