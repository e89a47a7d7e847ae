#include "minidl/distributed/mpi_process_group.h"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/cuda/pinned_allocator.h"
#include "minidl/core/cuda/stream.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"

#if MINIDL_WITH_MPI
#include "minidl/distributed/mpi_check.h"
#endif

namespace minidl::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// Completion of one queued collective. The worker completes it; wait() runs on the caller.
class MpiWork final : public Work {
 public:
  void wait() override {
    std::unique_lock lock(mutex_);
    done_changed_.wait(lock, [&] { return done_; });
    if (!error_.empty()) throw Error(error_);  // already says where it failed
    if (copy_back_) {
      // CUDA tensors: the result comes back from the pinned copy, on the caller's stream.
      auto copy_back = std::move(copy_back_);
      copy_back_ = nullptr;
      lock.unlock();
      copy_back();
    }
  }
  bool is_completed() override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void complete(std::string error) {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    done_changed_.notify_all();
  }
  void set_copy_back(std::function<void()> copy_back) { copy_back_ = std::move(copy_back); }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::string error_;
  std::function<void()> copy_back_;
};

enum class CollectiveKind : int64_t { AllReduce = 0, Broadcast, AllGather, ReduceScatter, Barrier };

const char* kind_name(int64_t kind) {
  switch (static_cast<CollectiveKind>(kind)) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "unknown collective";
}

// One queued collective. For CUDA tensors, `data` and `input` are pinned host copies.
struct Collective {
  CollectiveKind kind = CollectiveKind::Barrier;
  ReduceOp reduce_op = ReduceOp::Sum;
  int root = 0;
  Tensor data;   // all_reduce, broadcast: reduced in place; all_gather, reduce_scatter: output
  Tensor input;  // all_gather, reduce_scatter
  std::shared_ptr<MpiWork> work;
};

Collective make_collective(CollectiveKind kind, const Tensor& data = {}, const Tensor& input = {},
                           ReduceOp reduce_op = ReduceOp::Sum, int root = 0) {
  Collective collective;
  collective.kind = kind;
  collective.data = data;
  collective.input = input;
  collective.reduce_op = reduce_op;
  collective.root = root;
  return collective;
}

std::string describe(const Collective& collective) {
  std::ostringstream out;
  out << kind_name(static_cast<int64_t>(collective.kind));
  if (collective.data.defined())
    out << " of " << collective.data.numel() << " x " << collective.data.dtype();
  if (collective.kind == CollectiveKind::AllReduce ||
      collective.kind == CollectiveKind::ReduceScatter)
    out << " (" << reduce_op_name(collective.reduce_op) << ")";
  return out.str();
}

// Host copies of CUDA tensors (Note [One MPI thread per group]: the worker never touches the
// device). The copy to the host waits for the caller's stream, so the values are final.
Tensor stage_on_host(const Tensor& tensor) {
  Tensor host = cuda::empty_pinned(tensor.sizes(), tensor.dtype());
  host.copy_(tensor);
  cuda::current_stream(tensor.device().index).synchronize();
  return host;
}

}  // namespace

#if MINIDL_WITH_MPI

namespace {

// Messages between the workers of one group, on their own communicator: a type (the tag) and
// up to three numbers.
enum ControlTag : int { kStatusRequest = 1, kStatusReply = 2, kLeaving = 3 };
using ControlMessage = std::array<int64_t, 3>;
constexpr int64_t kNotInCollective = -1;

// How long a worker sleeps between polls once a collective has run for a while, and how long
// an idle worker waits for new work before it answers its peers again.
constexpr auto kSpinBeforeSleeping = std::chrono::microseconds(500);
constexpr auto kPollSleep = std::chrono::microseconds(50);
constexpr auto kIdlePoll = std::chrono::milliseconds(5);
// How long a timed-out rank waits for its peers to say where they are.
constexpr auto kDiagnosisWait = std::chrono::seconds(2);
// How long a leaving rank tries to deliver its notices before it goes.
constexpr auto kLeavingWait = std::chrono::seconds(1);

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
    case kFloat16:
    case kBFloat16: return MPI_UINT16_T;  // moved as bits; reductions go through f32
    case kInt32: return MPI_INT32_T;
    case kInt64: return MPI_INT64_T;
    case kUInt8: return MPI_UINT8_T;
    default: break;
  }
  MINIDL_INTERNAL_ASSERT(false, "no MPI datatype for ", dtype);
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::Max ? MPI_MAX : MPI_SUM; }

bool is_half(DType dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

int checked_count(const Tensor& tensor, const char* op) {
  MINIDL_CHECK(tensor.numel() <= INT_MAX, op, ": MPI counts are int, so at most ", INT_MAX,
               " elements per collective, got ", tensor.numel());
  return static_cast<int>(tensor.numel());
}

}  // namespace

struct MpiProcessGroup::Impl {
  MPI_Comm comm = MPI_COMM_NULL;     // the collectives
  MPI_Comm control = MPI_COMM_NULL;  // the workers' status messages
  int rank = 0;
  int size = 1;
  ProcessGroupOptions options;

  // ---- shared between callers and the worker (under mutex) ----
  mutable std::mutex mutex;
  std::condition_variable queue_changed;
  std::deque<Collective> queue;
  bool stopping = false;
  std::string failure;  // the first error; the group is broken once set
  std::thread worker;
  std::atomic<bool> shut_down{false};

  // ---- the worker's own state ----
  int64_t entered = 0;    // collectives started
  int64_t completed = 0;  // collectives finished
  int64_t current_kind = kNotInCollective;
  ControlMessage control_in{};
  MPI_Request control_receive = MPI_REQUEST_NULL;
  struct PendingSend {
    ControlMessage message;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<PendingSend> pending_sends;  // a list: MPI holds pointers into the messages
  std::map<int, int64_t> left_after;     // rank -> collectives it completed before leaving
  std::map<int, ControlMessage> status_replies;
  // Buffers of failed collectives that MPI may still write to: kept until the process ends.
  std::vector<Collective> abandoned;

  void start_worker() {
    worker = std::thread([this] { run_worker(); });
  }

  std::shared_ptr<Work> enqueue(Collective collective) {
    collective.work = std::make_shared<MpiWork>();
    std::shared_ptr<MpiWork> work = collective.work;
    {
      std::lock_guard lock(mutex);
      if (!failure.empty()) return std::make_shared<CompletedWork>(failure);
      MINIDL_CHECK(!stopping, describe(collective),
                   ": the mpi process group was shut down (distributed::finalize())");
      queue.push_back(std::move(collective));
    }
    queue_changed.notify_one();
    return work;
  }

  // ---------------- the worker ----------------

  void run_worker() {
    post_control_receive();
    while (true) {
      Collective collective;
      {
        std::unique_lock lock(mutex);
        queue_changed.wait_for(lock, kIdlePoll, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) {
          if (stopping) break;
          lock.unlock();
          service_control();
          continue;
        }
        collective = std::move(queue.front());
        queue.pop_front();
      }
      run(std::move(collective));
    }
    leave();
  }

  void run(Collective collective) {
    std::string broken;
    {
      std::lock_guard lock(mutex);
      broken = failure;
    }
    if (!broken.empty()) {
      collective.work->complete(broken);
      return;
    }
    ++entered;
    current_kind = static_cast<int64_t>(collective.kind);
    std::string error;
    try {
      NoGradGuard no_grad;  // averaging divides in place
      execute(collective);
      ++completed;
    } catch (const std::exception& e) {
      error = e.what();
      abandoned.push_back(collective);
      std::lock_guard lock(mutex);
      if (failure.empty()) failure = error;
    }
    current_kind = kNotInCollective;
    if (!error.empty()) logger().error("{}", error);
    collective.work->complete(std::move(error));
  }

  void execute(Collective& collective) {
    Tensor data = collective.data;
    const bool reduces = collective.kind == CollectiveKind::AllReduce ||
                         collective.kind == CollectiveKind::ReduceScatter;
    // f16 and bf16 are summed in f32: MPI has no 16-bit float types.
    Tensor buffer = reduces && is_half(data.dtype()) ? data.to(kFloat32) : data;
    Tensor input = collective.input;
    if (reduces && input.defined() && is_half(input.dtype())) input = input.to(kFloat32);

    MPI_Request request = MPI_REQUEST_NULL;
    switch (collective.kind) {
      case CollectiveKind::AllReduce:
        MINIDL_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buffer.data_ptr(), static_cast<int>(buffer.numel()),
                                        mpi_datatype(buffer.dtype()), mpi_op(collective.reduce_op),
                                        comm, &request));
        break;
      case CollectiveKind::Broadcast:
        MINIDL_MPI_CHECK(MPI_Ibcast(buffer.data_ptr(), static_cast<int>(buffer.numel()),
                                    mpi_datatype(buffer.dtype()), collective.root, comm, &request));
        break;
      case CollectiveKind::AllGather:
        MINIDL_MPI_CHECK(MPI_Iallgather(input.data_ptr(), static_cast<int>(input.numel()),
                                        mpi_datatype(input.dtype()), buffer.data_ptr(),
                                        static_cast<int>(input.numel()),
                                        mpi_datatype(buffer.dtype()), comm, &request));
        break;
      case CollectiveKind::ReduceScatter:
        if (buffer.is_same(data) && is_half(data.dtype())) buffer = empty(data.sizes(), kFloat32);
        MINIDL_MPI_CHECK(MPI_Ireduce_scatter_block(
            input.data_ptr(), buffer.data_ptr(), static_cast<int>(buffer.numel()),
            mpi_datatype(buffer.dtype()), mpi_op(collective.reduce_op), comm, &request));
        break;
      case CollectiveKind::Barrier:
        MINIDL_MPI_CHECK(MPI_Ibarrier(comm, &request));
        break;
    }
    wait_for(request, collective);

    if (reduces && collective.reduce_op == ReduceOp::Average)
      buffer.div_(static_cast<double>(size));
    if (!buffer.is_same(data)) data.copy_(buffer);
  }

  // Polls `request` until it completes, a peer has left, or the deadline passes.
  void wait_for(MPI_Request& request, const Collective& collective) {
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + options.timeout();
    while (true) {
      int done = 0;
      MINIDL_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (done) return;
      service_control();
      for (const auto& [peer, completed_by_peer] : left_after)
        MINIDL_CHECK(completed_by_peer >= entered, failure_header(collective), ": rank ", peer,
                     " has left the job (it finalized, or exited, after completing ",
                     completed_by_peer, " collectives), so this one can never complete");
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        const auto seconds = std::chrono::duration<double>(options.timeout()).count();
        MINIDL_CHECK(false, failure_header(collective), " timed out after ", seconds,
                     " s (MINIDL_COLLECTIVE_TIMEOUT_S); ", diagnose());
      }
      if (now - start > kSpinBeforeSleeping)
        std::this_thread::sleep_for(kPollSleep);
      else
        std::this_thread::yield();
    }
  }

  std::string failure_header(const Collective& collective) const {
    std::ostringstream out;
    out << "rank " << rank << ": " << describe(collective) << " (collective #" << entered
        << " of the mpi process group)";
    return out.str();
  }

  // Asks every peer where it is, and says which ranks have not arrived and why.
  std::string diagnose() {
    status_replies.clear();
    for (int peer = 0; peer < size; ++peer)
      if (peer != rank && !left_after.contains(peer)) send(peer, kStatusRequest, {entered, 0, 0});
    const Clock::time_point deadline = Clock::now() + kDiagnosisWait;
    while (status_replies.size() + left_after.size() + 1 < static_cast<size_t>(size) &&
           Clock::now() < deadline) {
      service_control();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::vector<int> missing;
    std::ostringstream details;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      if (auto left = left_after.find(peer); left != left_after.end()) {
        missing.push_back(peer);
        details << "; rank " << peer << " has left the job after completing " << left->second
                << " collectives";
        continue;
      }
      auto reply = status_replies.find(peer);
      if (reply == status_replies.end()) {
        missing.push_back(peer);
        details << "; rank " << peer << " did not answer within "
                << std::chrono::duration<double>(kDiagnosisWait).count()
                << " s (dead, or stuck outside MPI)";
        continue;
      }
      const auto [peer_entered, peer_completed, peer_kind] = reply->second;
      const std::string where = peer_kind == kNotInCollective
                                    ? std::string("is in no collective")
                                    : std::string("is in ") + kind_name(peer_kind) +
                                          " #" + std::to_string(peer_entered);
      if (peer_entered < entered || (peer_entered == entered && peer_kind == kNotInCollective &&
                                     peer_completed < entered)) {
        missing.push_back(peer);
        details << "; rank " << peer << " has not arrived: it has started " << peer_entered
                << " collectives and " << where;
      } else if (peer_entered == entered && peer_kind != current_kind) {
        missing.push_back(peer);
        details << "; rank " << peer << " called a different collective: it " << where;
      } else if (peer_kind == kNotInCollective) {
        details << "; rank " << peer << " has completed it and " << where;
      } else {
        details << "; rank " << peer << " " << where << " (waiting too)";
      }
    }
    std::ostringstream out;
    if (missing.empty()) {
      out << "every rank answered that it is in this collective";
    } else {
      out << "rank" << (missing.size() > 1 ? "s" : "") << " not in this collective:";
      for (int peer : missing) out << " " << peer;
    }
    return out.str() + details.str();
  }

  void post_control_receive() {
    MINIDL_MPI_CHECK(MPI_Irecv(control_in.data(), 3, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG,
                               control, &control_receive));
  }

  void send(int peer, ControlTag tag, ControlMessage message) {
    PendingSend& pending = pending_sends.emplace_back();
    pending.message = message;
    MINIDL_MPI_CHECK(MPI_Isend(pending.message.data(), 3, MPI_INT64_T, peer, tag, control,
                               &pending.request));
  }

  // Answers the peers' questions, records their news, and retires finished sends.
  void service_control() {
    while (true) {
      int arrived = 0;
      MPI_Status status;
      MINIDL_MPI_CHECK(MPI_Test(&control_receive, &arrived, &status));
      if (!arrived) break;
      const ControlMessage message = control_in;
      post_control_receive();
      switch (status.MPI_TAG) {
        case kStatusRequest:
          send(status.MPI_SOURCE, kStatusReply, {entered, completed, current_kind});
          break;
        case kStatusReply: status_replies[status.MPI_SOURCE] = message; break;
        case kLeaving: left_after[status.MPI_SOURCE] = message[0]; break;
        default: break;
      }
    }
    for (auto it = pending_sends.begin(); it != pending_sends.end();) {
      int sent = 0;
      MINIDL_MPI_CHECK(MPI_Test(&it->request, &sent, MPI_STATUS_IGNORE));
      it = sent ? pending_sends.erase(it) : std::next(it);
    }
  }

  // Tells every peer how many collectives this rank completed, waits until every peer has
  // left too (the group's timeout at most), then stops listening.
  void leave() {
    try {
      for (int peer = 0; peer < size; ++peer)
        if (peer != rank) send(peer, kLeaving, {completed, 0, 0});
      bool broken = false;
      {
        std::lock_guard lock(mutex);
        broken = !failure.empty();
      }
      const Clock::time_point deadline = Clock::now() + options.timeout();
      while (!broken && left_after.size() + 1 < static_cast<size_t>(size) &&
             Clock::now() < deadline) {
        service_control();
        std::this_thread::sleep_for(kPollSleep);
      }
      if (!broken && left_after.size() + 1 < static_cast<size_t>(size)) {
        std::ostringstream missing;
        for (int peer = 0; peer < size; ++peer)
          if (peer != rank && !left_after.contains(peer)) missing << " " << peer;
        std::lock_guard lock(mutex);
        failure = "rank " + std::to_string(rank) + ": finalize: waited " +
                  std::to_string(std::chrono::duration<double>(options.timeout()).count()) +
                  " s for every rank to finish, and these did not:" + missing.str();
      }
      const Clock::time_point send_deadline = Clock::now() + kLeavingWait;
      while (!pending_sends.empty() && Clock::now() < send_deadline) {
        service_control();
        std::this_thread::yield();
      }
      for (PendingSend& pending : pending_sends) MPI_Request_free(&pending.request);
      pending_sends.clear();
      MPI_Cancel(&control_receive);
      MPI_Wait(&control_receive, MPI_STATUS_IGNORE);
    } catch (const std::exception& e) {
      logger().warn("rank {}: mpi process group: while leaving: {}", rank, e.what());
    }
  }
};

std::shared_ptr<MpiProcessGroup> MpiProcessGroup::create_world(ProcessGroupOptions options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  MINIDL_CHECK(initialized, "MpiProcessGroup::create_world: MPI is not initialised; call ",
               "distributed::init() first (under mpirun)");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  MINIDL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl->comm));
  MINIDL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl->control));
  MINIDL_MPI_CHECK(MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN));
  MINIDL_MPI_CHECK(MPI_Comm_set_errhandler(impl->control, MPI_ERRORS_RETURN));
  MINIDL_MPI_CHECK(MPI_Comm_rank(impl->comm, &impl->rank));
  MINIDL_MPI_CHECK(MPI_Comm_size(impl->comm, &impl->size));
  impl->start_worker();
  return std::shared_ptr<MpiProcessGroup>(new MpiProcessGroup(std::move(impl)));
}

void MpiProcessGroup::shutdown() {
  if (impl_->shut_down.exchange(true)) return;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->queue_changed.notify_one();
  if (impl_->worker.joinable()) impl_->worker.join();
}

namespace detail {
void throw_mpi_error(int status, const char* call, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(status, message, &length) != MPI_SUCCESS) length = 0;
  ::minidl::detail::throw_error(file, line,
                                ::minidl::detail::concat("MPI error ", status, " in ", call, ": ",
                                                         std::string(message, length)));
}
}  // namespace detail

#else  // !MINIDL_WITH_MPI

struct MpiProcessGroup::Impl {
  int rank = 0;
  int size = 1;
  std::string failure;
  std::shared_ptr<Work> enqueue(Collective) {
    MINIDL_CHECK(false, "MpiProcessGroup: minidl was built without MPI");
    return nullptr;
  }
};

std::shared_ptr<MpiProcessGroup> MpiProcessGroup::create_world(ProcessGroupOptions) {
  MINIDL_CHECK(false, "MpiProcessGroup::create_world: minidl was built without MPI (install ",
               "libopenmpi-dev and configure again)");
  return nullptr;
}

void MpiProcessGroup::shutdown() {}

#endif  // MINIDL_WITH_MPI

// ---------------- the public methods, the same with and without MPI ----------------

MpiProcessGroup::MpiProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MpiProcessGroup::~MpiProcessGroup() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    logger().error("MpiProcessGroup: shutdown failed: {}", e.what());
  }
}

int MpiProcessGroup::rank() const { return impl_->rank; }
int MpiProcessGroup::size() const { return impl_->size; }

std::string MpiProcessGroup::failure() const {
#if MINIDL_WITH_MPI
  std::lock_guard lock(impl_->mutex);
#endif
  return impl_->failure;
}

namespace {

// Queues `collective` through `enqueue`, staging CUDA tensors on the host: the worker sees
// host copies, and wait() copies the result back to `device_result`.
template <class Enqueue>
std::shared_ptr<Work> enqueue_staged(Collective collective, const Tensor& device_result,
                                     Enqueue&& enqueue) {
  if (!device_result.is_cuda()) return enqueue(std::move(collective));
  collective.data = stage_on_host(collective.data);
  if (collective.input.defined()) collective.input = stage_on_host(collective.input);
  Tensor host_result = collective.data;
  std::shared_ptr<Work> work = enqueue(std::move(collective));
  if (auto* mpi_work = dynamic_cast<MpiWork*>(work.get()))
    mpi_work->set_copy_back([device_result, host_result] {
      NoGradGuard no_grad;
      Tensor(device_result).copy_(host_result);
    });
  return work;
}

}  // namespace

#if MINIDL_WITH_MPI
#define MINIDL_MPI_COUNT_CHECK(tensor, op) (void)checked_count(tensor, op)
#else
#define MINIDL_MPI_COUNT_CHECK(tensor, op) (void)0
#endif

std::shared_ptr<Work> MpiProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op) {
  detail::check_collective_tensor(tensor, "all_reduce");
  detail::check_reduce_op(op, tensor.dtype(), "all_reduce");
  MINIDL_MPI_COUNT_CHECK(tensor, "all_reduce");
  Collective collective = make_collective(CollectiveKind::AllReduce, tensor, {}, op);
  return enqueue_staged(std::move(collective), tensor,
                        [&](Collective c) { return impl_->enqueue(std::move(c)); });
}

std::shared_ptr<Work> MpiProcessGroup::broadcast_async(const Tensor& tensor, int root) {
  detail::check_collective_tensor(tensor, "broadcast");
  detail::check_root(root, size(), "broadcast");
  MINIDL_MPI_COUNT_CHECK(tensor, "broadcast");
  Collective collective =
      make_collective(CollectiveKind::Broadcast, tensor, {}, ReduceOp::Sum, root);
  return enqueue_staged(std::move(collective), tensor,
                        [&](Collective c) { return impl_->enqueue(std::move(c)); });
}

std::shared_ptr<Work> MpiProcessGroup::all_gather_async(const Tensor& output,
                                                        const Tensor& input) {
  detail::check_gather_sizes(output, input, size(), "all_gather", "output", "input");
  MINIDL_MPI_COUNT_CHECK(output, "all_gather");
  MINIDL_CHECK(!output.is_same(input), "all_gather: output and input must be different tensors");
  Collective collective = make_collective(CollectiveKind::AllGather, output, input);
  return enqueue_staged(std::move(collective), output,
                        [&](Collective c) { return impl_->enqueue(std::move(c)); });
}

std::shared_ptr<Work> MpiProcessGroup::reduce_scatter_async(const Tensor& output,
                                                            const Tensor& input, ReduceOp op) {
  detail::check_gather_sizes(input, output, size(), "reduce_scatter", "input", "output");
  detail::check_reduce_op(op, input.dtype(), "reduce_scatter");
  MINIDL_MPI_COUNT_CHECK(input, "reduce_scatter");
  MINIDL_CHECK(!output.is_same(input),
               "reduce_scatter: output and input must be different tensors");
  Collective collective = make_collective(CollectiveKind::ReduceScatter, output, input, op);
  return enqueue_staged(std::move(collective), output,
                        [&](Collective c) { return impl_->enqueue(std::move(c)); });
}

std::shared_ptr<Work> MpiProcessGroup::barrier_async() {
  return impl_->enqueue(make_collective(CollectiveKind::Barrier));
}

}  // namespace minidl::distributed
