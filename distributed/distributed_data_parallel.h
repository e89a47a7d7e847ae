#pragma once
// DistributedDataParallel: data-parallel training of a module, as PyTorch's DDP. Each rank
// holds a replica, runs forward and backward on its own share of the batch, and gets the
// gradients averaged over every rank by the end of backward, so optimizer.step() makes the
// same update everywhere.
//
//   distributed::init();
//   auto model = models::LeNet();
//   model->to(device);
//   distributed::DistributedDataParallel ddp(model);   // rank 0's weights on every rank
//   optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
//   for (auto& batch : loader) {                        // a DistributedSampler's shard
//     optimizer.zero_grad();
//     Tensor loss = cross_entropy(ddp(batch.data), batch.target);
//     loss.backward();                                  // gradients averaged when it returns
//     optimizer.step();
//   }
//   ddp.sync_buffers();                                 // before evaluating or saving
//
// Construction (collective: every rank constructs it, with the same model):
//   - checks that every rank has the same parameter and buffer names, dtypes and shapes; a
//     difference is an error on every rank, naming the first entry that differs;
//   - broadcasts rank 0's parameters and buffers;
//   - registers the gradient hooks (GradientReducer, gradient_reducer.h: 25 MB buckets in
//     reverse parameter order, each all-reduced as soon as it is full, overlapping backward).
// With world size 1 there is nothing to average: no hooks, backward is untouched.
//
// Gradient accumulation: backward passes run under a no_sync() guard only accumulate .grad;
// the first pass after it averages the accumulated gradients.
//
//   { auto guard = ddp.no_sync(); loss1.backward(); }   // local
//   loss2.backward();                                   // averaged: (g1 + g2) over ranks
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/distributed/gradient_reducer.h"
#include "minidl/distributed/process_group.h"
#include "minidl/nn/any_module.h"

namespace minidl::distributed {

struct DistributedDataParallelOptions {
  DistributedDataParallelOptions() = default;
  // Bucket size in MiB (PyTorch's bucket_cap_mb).
  MINIDL_ARG(double, bucket_cap_mb) = 25.0;
  // Parameters that get no gradient in a pass count as zero gradients, instead of an error
  // that names them.
  MINIDL_ARG(bool, find_unused_parameters) = false;
  // The group to average over; null: default_process_group(the parameters' device).
  MINIDL_ARG(std::shared_ptr<ProcessGroup>, process_group) = nullptr;
};

class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(nn::AnyModule module,
                                   DistributedDataParallelOptions options = {});
  DistributedDataParallel(DistributedDataParallel&&) noexcept = default;
  DistributedDataParallel& operator=(DistributedDataParallel&&) noexcept = default;
  ~DistributedDataParallel();

  Tensor forward(const Tensor& x) { return module_.forward(x); }
  Tensor operator()(const Tensor& x) { return forward(x); }

  // The wrapped module (its parameters for the optimizer, train()/eval(), state_dict()).
  const std::shared_ptr<nn::Module>& module() const { return module_.ptr(); }
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }

  // While the guard lives, backward passes do not average gradients (they accumulate).
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(GradientReducer* reducer);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    GradientReducer* reducer_;
    bool previous_ = true;
  };
  [[nodiscard]] NoSyncGuard no_sync();

  // Broadcasts every buffer (batch norm's running statistics) from rank 0, so that every
  // rank evaluates and saves the same model. Collective; blocks until done.
  void sync_buffers();

  // Waits for the gradient all-reduces of the pass and writes the averages into .grad. This
  // happens by itself at the end of backward(); call it only if gradients were produced
  // without backward().
  void finish_gradient_synchronization();

  // The parameter names of each gradient bucket, in launch order (empty for world size 1).
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

  // For ZeRO-1's reduce-scatter form (ZeroRedundancyOptimizer::attach, which calls it): from the
  // next backward on, each bucket is reduce-scattered instead of all-reduced, and .grad keeps
  // this rank's own gradients (Note [Reduce-scattered buckets] in gradient_reducer.h).
  // `parameter_groups`: the optimizer's groups, which never share a bucket; together they must
  // hold exactly the parameters DDP averages. Returns the reducer whose buckets hold the shards,
  // or null for world size 1 (nothing to reduce).
  const GradientReducer* reduce_scatter_gradients(
      const std::vector<std::vector<Tensor>>& parameter_groups);

 private:
  void check_same_model_on_every_rank();
  void broadcast_parameters_and_buffers();

  nn::AnyModule module_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<ProcessGroup> group_;
  Device device_;
  std::unique_ptr<GradientReducer> reducer_;
};

}  // namespace minidl::distributed
