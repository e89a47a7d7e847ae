#pragma once
// GradientReducer: averages parameter gradients over the ranks of a process group during
// backward, in buckets, for DistributedDataParallel.
//
// Buckets: the parameters, in reverse registration order (about the order backward produces
// their gradients), are cut into buckets of at most `bucket_bytes` (a larger parameter gets a
// bucket of its own), one flat buffer per bucket, never mixing dtypes or devices.
//
// One backward pass:
//   1. A parameter's post-accumulate-grad hook copies its .grad into its bucket's buffer.
//   2. When every parameter of a bucket has reported, the bucket is all-reduced (average) at
//      once, asynchronously, while backward goes on. Buckets are launched strictly in bucket
//      order, so every rank issues the same collectives in the same order, whatever order its
//      hooks fire in.
//   3. At the end of the pass (an autograd::queue_callback queued by the first hook), the
//      reducer waits for every bucket and copies the averages back into .grad. On CUDA with
//      NCCL, "waits" means the current stream waits: the host does not.
// A parameter that got no gradient in the pass is an error naming it, or, with
// find_unused_parameters, contributes zeros (or its .grad from earlier passes under no_sync),
// so the buckets still complete.
// While sync is off (DistributedDataParallel::no_sync()), the hooks do nothing: gradients
// accumulate locally, and the next synchronised pass averages the accumulated .grad.
//
// Note [Reduce-scattered buckets]
// ZeRO-1's reduce-scatter form (ZeroRedundancyOptimizer with ZeroSharding::ReduceScatter) asks
// for reduce_scatter_into_shards(keys): the buckets are planned again so that no bucket mixes
// two keys (the optimizer's param groups, whose options differ), each bucket's buffer is padded
// with zeros to a multiple of the world size N, and a full bucket is reduce-scattered (average)
// instead of all-reduced: rank r receives the averaged elements [r * P / N, (r + 1) * P / N) of
// the bucket's P padded elements in the bucket's `shard`. Nothing is copied back into .grad,
// which keeps this rank's own (local, not averaged) gradients; the buffer is free between passes
// (the optimizer all-gathers the updated parameters through it). The averages are the very sums
// an all-reduce makes, divided alike, so with 2 ranks they equal DDP's bit for bit.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/distributed/process_group.h"

namespace minidl::distributed {

class GradientReducer {
 public:
  using NamedParameters = std::vector<std::pair<std::string, Tensor>>;

  // Registers a hook on every parameter (leaves that require grad).
  GradientReducer(NamedParameters parameters, std::shared_ptr<ProcessGroup> group,
                  size_t bucket_bytes, bool find_unused_parameters);
  // Removes the hooks; waits for collectives still in flight (errors are logged).
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  void set_sync(bool enabled) { sync_enabled_ = enabled; }
  bool sync_enabled() const { return sync_enabled_; }

  // The end of a pass: runs by itself at the end of backward; call it only when gradients
  // were produced some other way than backward(). Does nothing when no hook fired.
  void finish();

  // The parameter names of each bucket, in launch order (for tests and logs).
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

  // Note [Reduce-scattered buckets]: `bucket_keys` holds one key per parameter (constructor
  // order); parameters of different keys never share a bucket. Not during a backward pass.
  void reduce_scatter_into_shards(const std::vector<int>& bucket_keys);
  bool reduces_scatter() const { return reduce_scatter_; }

  // One bucket of the reduce-scatter form, for the optimizer that steps its shards.
  struct ShardedBucket {
    std::vector<Tensor> parameters;  // in bucket order
    std::vector<int64_t> offsets;    // element offset of each in the bucket
    int key = 0;
    Tensor buffer;  // [padded elements], a multiple of the world size: this rank's gradients
    Tensor shard;   // [padded elements / world size]: the averaged slice of this rank
  };
  std::vector<ShardedBucket> sharded_buckets() const;
  // Synchronised passes finished so far (the shards hold the last one's averages).
  uint64_t finished_passes() const { return finished_passes_; }

 private:
  struct Bucket {
    Tensor buffer;  // flat, [total elements (padded)], the parameters' dtype/device
    Tensor shard;   // reduce-scatter form: [elements / world size]
    std::vector<size_t> parameters;  // indices into parameters_
    std::vector<int64_t> offsets;    // element offset of each parameter in buffer
    int key = 0;                     // Note [Reduce-scattered buckets]
    size_t pending = 0;              // parameters that have not reported in this pass
    std::shared_ptr<Work> work;      // the all-reduce (or reduce-scatter) in flight
  };
  struct Slot {  // where a parameter lives in the buckets
    size_t bucket = 0;
    size_t position = 0;  // index within the bucket
  };

  void plan_buckets(const std::vector<int>& bucket_keys);
  void on_gradient_ready(size_t parameter);
  void copy_into_bucket(size_t parameter, const Tensor& gradient);
  void launch_ready_buckets();
  void finish_pass();
  void handle_unused_parameters();
  void wait_for_launched(bool rethrow);
  void reset_pass();
  Tensor bucket_view(size_t parameter) const;

  NamedParameters parameters_;
  std::shared_ptr<ProcessGroup> group_;
  size_t bucket_bytes_;
  bool find_unused_parameters_;
  bool reduce_scatter_ = false;
  uint64_t finished_passes_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;
  std::vector<int> hook_handles_;
  std::vector<bool> ready_;
  size_t next_bucket_to_launch_ = 0;
  bool pass_active_ = false;
  bool sync_enabled_ = true;
};

}  // namespace minidl::distributed
