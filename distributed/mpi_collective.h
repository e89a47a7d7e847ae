#pragma once
// One collective of an MpiProcessGroup on its way through the worker's queue (Note [One MPI
// thread per group], mpi_process_group.h), and the Work its caller waits on.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "minidl/distributed/process_group.h"

namespace minidl::distributed::detail {

// The workers tell each other which collective they are in by this number (mpi_diagnosis.h).
enum class CollectiveKind : int64_t { AllReduce = 0, Broadcast, AllGather, ReduceScatter, Barrier };

// "all_reduce", "broadcast", ...; takes the number a peer sent.
const char* kind_name(int64_t kind);

// Completion of one queued collective. The worker completes it; wait() runs on the caller.
class MpiWork final : public Work {
 public:
  void wait() override;
  bool is_completed() override;
  // An empty `error` is success.
  void complete(std::string error);
  // For CUDA tensors: wait() then copies the result back from the pinned host copy.
  void set_copy_back(std::function<void()> copy_back) { copy_back_ = std::move(copy_back); }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::string error_;
  std::function<void()> copy_back_;
};

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
                           ReduceOp reduce_op = ReduceOp::Sum, int root = 0);

// For errors: "all_reduce of 1024 x float32 (sum)".
std::string describe(const Collective& collective);

}  // namespace minidl::distributed::detail
