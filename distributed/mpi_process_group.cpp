// MpiProcessGroup with MPI: what a collective does on the caller's thread (the checks, host
// copies of CUDA tensors) before it joins the queue of the group's worker (mpi_worker.h). CMake
// builds this file when it finds MPI, and without_mpi.cpp otherwise.
#include "minidl/distributed/mpi_process_group.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/mpi_check.h"
#include "minidl/distributed/mpi_collective.h"
#include "minidl/distributed/mpi_datatype.h"
#include "minidl/distributed/mpi_worker.h"

namespace minidl::distributed {

using detail::Collective;
using detail::CollectiveKind;
using detail::make_collective;

namespace {

// CUDA tensors through MPI, for machines without NCCL: the worker never touches the device
// (Note [One MPI thread per group], mpi_process_group.h), so it gets pinned host copies. The
// copy to the host waits for the caller's stream, so the values are final: this path
// synchronises the host with the device.
Tensor stage_on_host(const Tensor& tensor) {
  Tensor host = cuda::empty_pinned(tensor.sizes(), tensor.dtype());
  host.copy_(tensor);
  cuda::current_stream(tensor.device().index).synchronize();
  return host;
}

// Queues `collective` on `worker`, staging it on the host when `device_result` (the tensor it
// writes) is a CUDA tensor: wait() then copies the result back to `device_result`.
std::shared_ptr<Work> enqueue_staged(detail::MpiWorker& worker, Collective collective,
                                     const Tensor& device_result) {
  if (!device_result.is_cuda()) return worker.enqueue(std::move(collective));
  collective.data = stage_on_host(collective.data);
  if (collective.input.defined()) collective.input = stage_on_host(collective.input);
  Tensor host_result = collective.data;
  std::shared_ptr<Work> work = worker.enqueue(std::move(collective));
  // A broken group answers with a CompletedWork, which has nothing to copy back.
  if (auto* mpi_work = dynamic_cast<detail::MpiWork*>(work.get()))
    mpi_work->set_copy_back([device_result, host_result] {
      NoGradGuard no_grad;
      Tensor(device_result).copy_(host_result);
    });
  return work;
}

}  // namespace

struct MpiProcessGroup::Impl {
  Impl(MPI_Comm comm, MPI_Comm control, int rank, int size, ProcessGroupOptions options)
      : worker(comm, control, rank, size, options) {}
  detail::MpiWorker worker;
};

std::shared_ptr<MpiProcessGroup> MpiProcessGroup::create_world(ProcessGroupOptions options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  MINIDL_CHECK(initialized, "MpiProcessGroup::create_world: MPI is not initialised; call ",
               "distributed::init() first (under mpirun)");
  MPI_Comm comm = MPI_COMM_NULL;     // the collectives
  MPI_Comm control = MPI_COMM_NULL;  // the workers' status messages
  MINIDL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  MINIDL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &control));
  MINIDL_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  MINIDL_MPI_CHECK(MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN));
  int rank = 0;
  int size = 1;
  MINIDL_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MINIDL_MPI_CHECK(MPI_Comm_size(comm, &size));
  auto impl = std::make_unique<Impl>(comm, control, rank, size, options);
  return std::shared_ptr<MpiProcessGroup>(new MpiProcessGroup(std::move(impl)));
}

MpiProcessGroup::MpiProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MpiProcessGroup::~MpiProcessGroup() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    logger().error("MpiProcessGroup: shutdown failed: {}", e.what());
  }
}

void MpiProcessGroup::shutdown() { impl_->worker.stop(); }

int MpiProcessGroup::rank() const { return impl_->worker.rank(); }
int MpiProcessGroup::size() const { return impl_->worker.size(); }
std::string MpiProcessGroup::failure() const { return impl_->worker.failure(); }

std::shared_ptr<Work> MpiProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op) {
  detail::check_collective_tensor(tensor, "all_reduce");
  detail::check_reduce_op(op, tensor.dtype(), "all_reduce");
  detail::check_mpi_count(tensor, "all_reduce");
  return enqueue_staged(impl_->worker, make_collective(CollectiveKind::AllReduce, tensor, {}, op),
                        tensor);
}

std::shared_ptr<Work> MpiProcessGroup::broadcast_async(const Tensor& tensor, int root) {
  detail::check_collective_tensor(tensor, "broadcast");
  detail::check_root(root, size(), "broadcast");
  detail::check_mpi_count(tensor, "broadcast");
  return enqueue_staged(impl_->worker,
                        make_collective(CollectiveKind::Broadcast, tensor, {}, ReduceOp::Sum, root),
                        tensor);
}

std::shared_ptr<Work> MpiProcessGroup::all_gather_async(const Tensor& output, const Tensor& input) {
  detail::check_gather_sizes(output, input, size(), "all_gather", "output", "input");
  detail::check_mpi_count(output, "all_gather");
  MINIDL_CHECK(!output.is_same(input), "all_gather: output and input must be different tensors");
  return enqueue_staged(impl_->worker, make_collective(CollectiveKind::AllGather, output, input),
                        output);
}

std::shared_ptr<Work> MpiProcessGroup::reduce_scatter_async(const Tensor& output,
                                                            const Tensor& input, ReduceOp op) {
  detail::check_gather_sizes(input, output, size(), "reduce_scatter", "input", "output");
  detail::check_reduce_op(op, input.dtype(), "reduce_scatter");
  detail::check_mpi_count(input, "reduce_scatter");
  MINIDL_CHECK(!output.is_same(input),
               "reduce_scatter: output and input must be different tensors");
  return enqueue_staged(impl_->worker,
                        make_collective(CollectiveKind::ReduceScatter, output, input, op), output);
}

std::shared_ptr<Work> MpiProcessGroup::barrier_async() {
  return impl_->worker.enqueue(make_collective(CollectiveKind::Barrier));
}

}  // namespace minidl::distributed
