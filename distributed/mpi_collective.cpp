#include "minidl/distributed/mpi_collective.h"

#include <sstream>

#include "minidl/core/error.h"

namespace minidl::distributed::detail {

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

void MpiWork::wait() {
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

bool MpiWork::is_completed() {
  std::lock_guard lock(mutex_);
  return done_;
}

void MpiWork::complete(std::string error) {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  done_changed_.notify_all();
}

Collective make_collective(CollectiveKind kind, const Tensor& data, const Tensor& input,
                           ReduceOp reduce_op, int root) {
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

}  // namespace minidl::distributed::detail
