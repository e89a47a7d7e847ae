#pragma once
// ProcessGroup: the collectives that data-parallel training needs, over the ranks of one job.
//
// Conventions, the same for every backend:
//   - Tensors are contiguous and are reduced in place; every rank passes a tensor of the same
//     dtype and number of elements (a mismatch is undefined, as in MPI and NCCL).
//   - Every rank calls the same collectives in the same order. A rank that does not arrive
//     within the group's timeout turns into a minidl::Error on the ranks that wait, naming the
//     collective and the ranks missing, never into a hang (see Note [Collective timeouts]).
//   - The *_async forms return a Work at once; the blocking forms are async + wait().
//     MpiProcessGroup's Work::wait() blocks the host; NcclProcessGroup's makes the current CUDA
//     stream wait (no host synchronisation) and throws only errors already known.
//   - After a failure the group is broken: every later collective throws the first error.
//
// Dtypes: f32, f64, f16, bf16, i32, i64, u8. ReduceOp::Average divides the sum by the world
// size, for floating-point dtypes only.
#include <chrono>
#include <memory>
#include <string>

#include "minidl/core/tensor.h"

namespace minidl::distributed {

enum class ReduceOp { Sum, Average, Max };
const char* reduce_op_name(ReduceOp op);

// One collective in flight.
class Work {
 public:
  virtual ~Work() = default;
  // Until the collective's result can be used: see the conventions above. Throws the
  // collective's error (a timeout, a peer that left, a library error).
  virtual void wait() = 0;
  // True once the collective has finished (or failed); never blocks.
  virtual bool is_completed() = 0;
};

// The collective timeout: MINIDL_COLLECTIVE_TIMEOUT_S (seconds, may be fractional) when set,
// else 300 s. Invalid values throw, naming the variable.
std::chrono::milliseconds default_collective_timeout();

struct ProcessGroupOptions {
  ProcessGroupOptions() : timeout_(default_collective_timeout()) {}
  ProcessGroupOptions& timeout(std::chrono::milliseconds value) {
    timeout_ = value;
    return *this;
  }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::chrono::milliseconds timeout_;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend_name() const = 0;  // "single", "mpi", "nccl"
  // The first error of a failed collective (the group is broken), or empty.
  virtual std::string failure() const { return {}; }

  // tensor <- op over every rank's tensor.
  virtual std::shared_ptr<Work> all_reduce_async(const Tensor& tensor,
                                                 ReduceOp op = ReduceOp::Sum) = 0;
  // tensor <- root's tensor.
  virtual std::shared_ptr<Work> broadcast_async(const Tensor& tensor, int root = 0) = 0;
  // output (size() * input.numel() elements) <- every rank's input, in rank order.
  virtual std::shared_ptr<Work> all_gather_async(const Tensor& output, const Tensor& input) = 0;
  // output <- op over every rank's input, of which this rank keeps the slice
  // [rank * output.numel(), (rank + 1) * output.numel()).
  virtual std::shared_ptr<Work> reduce_scatter_async(const Tensor& output, const Tensor& input,
                                                     ReduceOp op = ReduceOp::Sum) = 0;
  virtual std::shared_ptr<Work> barrier_async() = 0;

  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) {
    all_reduce_async(tensor, op)->wait();
  }
  void broadcast(const Tensor& tensor, int root = 0) { broadcast_async(tensor, root)->wait(); }
  void all_gather(const Tensor& output, const Tensor& input) {
    all_gather_async(output, input)->wait();
  }
  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) {
    reduce_scatter_async(output, input, op)->wait();
  }
  void barrier() { barrier_async()->wait(); }
};

// A Work that is already done (world size 1, empty tensors), or already failed.
class CompletedWork final : public Work {
 public:
  CompletedWork() = default;
  explicit CompletedWork(std::string error) : error_(std::move(error)) {}
  void wait() override;
  bool is_completed() override { return true; }

 private:
  std::string error_;
};

namespace detail {
// The checks every backend makes before it queues a collective; `op` names it in errors.
void check_collective_tensor(const Tensor& tensor, const char* op);
void check_reduce_op(ReduceOp reduce_op, DType dtype, const char* op);
void check_root(int root, int world_size, const char* op);
void check_gather_sizes(const Tensor& large, const Tensor& small, int world_size, const char* op,
                        const char* large_name, const char* small_name);
}  // namespace detail

}  // namespace minidl::distributed
