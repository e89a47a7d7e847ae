// NcclProcessGroup with NCCL. CMake builds this file when it finds CUDA and NCCL, and
// without_nccl.cpp otherwise.
#include "minidl/distributed/nccl_process_group.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/distributed/collective_watch.h"
#include "minidl/distributed/cuda_process_group.h"

namespace minidl::distributed {

namespace {

using Clock = std::chrono::steady_clock;
// How often the watchdog looks at the pending collectives and the communicator's errors.
constexpr auto kWatchdogPeriod = std::chrono::milliseconds(100);

ncclDataType_t nccl_datatype(DType dtype) {
  switch (dtype) {
    case kFloat32: return ncclFloat32;
    case kFloat64: return ncclFloat64;
    case kFloat16: return ncclFloat16;
    case kBFloat16: return ncclBfloat16;
    case kInt32: return ncclInt32;
    case kInt64: return ncclInt64;
    case kUInt8: return ncclUint8;
    default: break;
  }
  MINIDL_INTERNAL_ASSERT(false, "no NCCL datatype for ", dtype);
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Average: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
  }
  return ncclSum;
}

}  // namespace

struct NcclProcessGroup::Impl {
  ncclComm_t comm = nullptr;
  int device = 0;
  int rank = 0;
  int size = 1;
  ProcessGroupOptions options;
  cuda::Stream stream;  // the communication stream
  uint64_t sequence = 0;

  mutable std::mutex mutex;
  std::condition_variable stop_requested;
  std::vector<WatchedCollective> pending;  // queued collectives, until their events have passed
  std::string failure;
  bool aborted = false;
  bool stopping = false;
  std::thread watchdog;

  std::string failure_now() const {
    std::lock_guard lock(mutex);
    return failure;
  }

  // Breaks the group: records the first error, logs it, aborts the communicator (which ends
  // kernels waiting for peers, so the streams drain).
  void fail(const std::string& error) {
    {
      std::lock_guard lock(mutex);
      if (failure.empty()) failure = error;
      pending.clear();
      if (aborted) return;
      aborted = true;
    }
    logger().error("{}", error);
    ncclCommAbort(comm);
  }

  // Nothing may leave this thread (std::terminate, and the peers would wait for the whole
  // timeout): a failing event query, or anything else that throws, breaks the group through
  // fail(), which aborts the communicator.
  void run_watchdog() {
    cudaSetDevice(device);
    std::unique_lock lock(mutex);
    while (!stopping) {
      stop_requested.wait_for(lock, kWatchdogPeriod);
      if (stopping || aborted) continue;
      std::string error;
      try {
        error = check_watched_collectives(pending, Clock::now(), rank, options.timeout());
        if (error.empty()) error = asynchronous_error();
      } catch (const std::exception& caught) {
        error = "rank " + std::to_string(rank) +
                ": the nccl process group's watchdog failed: " + caught.what();
      }
      if (!error.empty()) {
        lock.unlock();
        fail(error);
        lock.lock();
      }
    }
  }

  // NCCL's own error of the communicator (a peer's connection lost, say), or empty.
  std::string asynchronous_error() const {
    ncclResult_t async_error = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &async_error) != ncclSuccess || async_error == ncclSuccess ||
        async_error == ncclInProgress)
      return {};
    return "rank " + std::to_string(rank) +
           ": NCCL reported an asynchronous error: " + ncclGetErrorString(async_error) + " (" +
           ncclGetLastError(comm) + ")";
  }

  void throw_if_failed() const {
    const std::string error = failure_now();
    MINIDL_CHECK(error.empty(), error);
  }
};

namespace {

// Done when the communication stream has passed its event; wait() orders the caller's stream
// after it, or, for a barrier, also waits on the host.
class NcclWork final : public Work {
 public:
  NcclWork(NcclProcessGroup::Impl* group, std::shared_ptr<cuda::Event> done,
           std::string description, bool host_waits)
      : group_(group),
        done_(std::move(done)),
        description_(std::move(description)),
        host_waits_(host_waits) {}

  void wait() override {
    group_->throw_if_failed();
    cuda::DeviceGuard device(group_->device);
    done_->wait(cuda::current_stream(group_->device));
    if (host_waits_) {
      // Polled, not synchronised, so a timeout (the watchdog aborts the communicator) or an
      // error elsewhere ends the wait.
      while (!finished_or_failed()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    group_->throw_if_failed();
  }
  bool is_completed() override { return finished_or_failed(); }

 private:
  // A query that throws (a fault on the device) breaks the group, as it does in the watchdog,
  // so that every waiter gets the one error that names the collective.
  bool finished_or_failed() {
    if (!group_->failure_now().empty()) return true;
    try {
      return done_->query();
    } catch (const std::exception& error) {
      group_->fail(collective_failed_on_device(group_->rank, description_, error.what()));
      return true;
    }
  }

  NcclProcessGroup::Impl* group_;
  std::shared_ptr<cuda::Event> done_;
  std::string description_;
  bool host_waits_;
};

void check_on_device(const Tensor& tensor, int device, const char* op) {
  MINIDL_CHECK(tensor.is_cuda() && tensor.device().index == device, op,
               ": the nccl process group takes tensors on cuda:", device, ", got one on ",
               tensor.device());
}

}  // namespace

std::shared_ptr<NcclProcessGroup> NcclProcessGroup::create(ProcessGroup& bootstrap, int device,
                                                           ProcessGroupOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->rank = bootstrap.rank();
  impl->size = bootstrap.size();
  impl->options = options;
  cuda::DeviceGuard guard(device);

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (impl->rank == 0) MINIDL_NCCL_CHECK(ncclGetUniqueId(&id));
  Tensor id_bytes = from_host(&id, {static_cast<int64_t>(sizeof id)}, kUInt8);
  bootstrap.broadcast(id_bytes, 0);
  std::memcpy(&id, id_bytes.data_ptr(), sizeof id);
  MINIDL_NCCL_CHECK(ncclCommInitRank(&impl->comm, impl->size, id, impl->rank));

  impl->stream = cuda::Stream::create(device);
  Impl* raw = impl.get();
  impl->watchdog = std::thread([raw] { raw->run_watchdog(); });
  logger().debug("nccl process group: rank {} of {} on cuda:{}", impl->rank, impl->size, device);
  return std::shared_ptr<NcclProcessGroup>(new NcclProcessGroup(std::move(impl)));
}

NcclProcessGroup::NcclProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclProcessGroup::~NcclProcessGroup() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->stop_requested.notify_all();
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
  if (!impl_->aborted && impl_->comm != nullptr) {
    const ncclResult_t result = ncclCommDestroy(impl_->comm);
    if (result != ncclSuccess)
      logger().error("NcclProcessGroup: ncclCommDestroy: {}", ncclGetErrorString(result));
  }
}

int NcclProcessGroup::rank() const { return impl_->rank; }
int NcclProcessGroup::size() const { return impl_->size; }
std::string NcclProcessGroup::failure() const { return impl_->failure_now(); }

namespace {

// Orders the communication stream after the caller's stream, runs `launch` on it, and returns
// the Work that the watchdog watches. `tensors` are marked as used on the communication stream.
template <class Launch>
std::shared_ptr<Work> run_collective(NcclProcessGroup::Impl& group, const std::string& what,
                                     std::initializer_list<Tensor> tensors, bool host_waits,
                                     Launch&& launch) {
  group.throw_if_failed();
  cuda::DeviceGuard device(group.device);
  cuda::Event ready;
  ready.record(cuda::current_stream(group.device));
  ready.wait(group.stream);
  launch(static_cast<cudaStream_t>(group.stream.handle()));
  for (const Tensor& tensor : tensors) cuda::record_stream(*tensor.storage(), group.stream);
  auto done = std::make_shared<cuda::Event>();
  done->record(group.stream);
  std::string description;
  {
    std::lock_guard lock(group.mutex);
    ++group.sequence;
    description =
        what + " (collective #" + std::to_string(group.sequence) + " of the nccl process group)";
    group.pending.push_back({[done] { return done->query(); },
                             std::chrono::steady_clock::now() + group.options.timeout(),
                             description});
  }
  return std::make_shared<NcclWork>(&group, std::move(done), std::move(description), host_waits);
}

std::string describe(const char* op, const Tensor& tensor) {
  std::ostringstream out;
  out << op << " of " << tensor.numel() << " x " << tensor.dtype();
  return out.str();
}

}  // namespace

std::shared_ptr<Work> NcclProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op) {
  detail::check_collective_tensor(tensor, "all_reduce");
  detail::check_reduce_op(op, tensor.dtype(), "all_reduce");
  check_on_device(tensor, impl_->device, "all_reduce");
  return run_collective(
      *impl_, describe("all_reduce", tensor), {tensor}, false, [&](cudaStream_t stream) {
        MINIDL_NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(),
                                        nccl_datatype(tensor.dtype()), nccl_op(op), impl_->comm,
                                        stream));
      });
}

std::shared_ptr<Work> NcclProcessGroup::broadcast_async(const Tensor& tensor, int root) {
  detail::check_collective_tensor(tensor, "broadcast");
  detail::check_root(root, size(), "broadcast");
  check_on_device(tensor, impl_->device, "broadcast");
  return run_collective(
      *impl_, describe("broadcast", tensor), {tensor}, false, [&](cudaStream_t stream) {
        MINIDL_NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(),
                                        nccl_datatype(tensor.dtype()), root, impl_->comm, stream));
      });
}

std::shared_ptr<Work> NcclProcessGroup::all_gather_async(const Tensor& output,
                                                         const Tensor& input) {
  detail::check_gather_sizes(output, input, size(), "all_gather", "output", "input");
  check_on_device(output, impl_->device, "all_gather");
  return run_collective(
      *impl_, describe("all_gather", input), {output, input}, false, [&](cudaStream_t stream) {
        MINIDL_NCCL_CHECK(ncclAllGather(input.data_ptr(), output.data_ptr(), input.numel(),
                                        nccl_datatype(input.dtype()), impl_->comm, stream));
      });
}

std::shared_ptr<Work> NcclProcessGroup::reduce_scatter_async(const Tensor& output,
                                                             const Tensor& input, ReduceOp op) {
  detail::check_gather_sizes(input, output, size(), "reduce_scatter", "input", "output");
  detail::check_reduce_op(op, input.dtype(), "reduce_scatter");
  check_on_device(output, impl_->device, "reduce_scatter");
  return run_collective(
      *impl_, describe("reduce_scatter", output), {output, input}, false, [&](cudaStream_t stream) {
        MINIDL_NCCL_CHECK(ncclReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(),
                                            nccl_datatype(input.dtype()), nccl_op(op), impl_->comm,
                                            stream));
      });
}

std::shared_ptr<Work> NcclProcessGroup::barrier_async() {
  Tensor token = zeros({1}, TensorOptions(kFloat32).device(Device(kCUDA, impl_->device)));
  return run_collective(*impl_, "barrier", {token}, true, [&](cudaStream_t stream) {
    MINIDL_NCCL_CHECK(ncclAllReduce(token.data_ptr(), token.data_ptr(), 1, ncclFloat32, ncclSum,
                                    impl_->comm, stream));
  });
}

std::shared_ptr<ProcessGroup> detail::create_cuda_process_group(
    const std::shared_ptr<ProcessGroup>& cpu_group, int device, ProcessGroupOptions options) {
  return NcclProcessGroup::create(*cpu_group, device, options);
}

}  // namespace minidl::distributed
