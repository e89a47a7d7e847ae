#pragma once
// ZeroRedundancyOptimizer: ZeRO stage 1, as torch.distributed.optim.ZeroRedundancyOptimizer.
// It wraps an optimizer and shards its state over the ranks of a process group, so that the
// optimizer state per rank is about 1/N of the unsharded state. It has two forms, chosen by
// ZeroRedundancyOptimizerOptions::sharding:
//
//  - ZeroSharding::ReduceScatter (llm.c's `-z 1`, DeepSpeed's ZeRO-1; what the trainers' --zero 1
//    use): each rank owns an equal flat slice of every DDP gradient bucket. Backward
//    reduce-scatters the buckets instead of all-reducing them, the wrapped optimizer steps this
//    rank's slices, and the updated slices are all-gathered into the parameters. It needs the
//    DDP wrapper, once: optimizer.attach(ddp).
//
//      distributed::DistributedDataParallel ddp(model);
//      distributed::ZeroRedundancyOptimizer optimizer(
//          model->parameters(),
//          [](std::vector<optim::OptimizerParamGroup> groups) {
//            return std::make_unique<optim::AdamW>(std::move(groups), optim::AdamWOptions(1e-3));
//          },
//          distributed::ZeroRedundancyOptimizerOptions().sharding(
//              distributed::ZeroSharding::ReduceScatter));
//      optimizer.attach(ddp);                  // DDP reduce-scatters from now on
//      ...loss.backward(); optimizer.clip_grad_norm_(1.0); optimizer.step();
//
//  - ZeroSharding::WholeParameters (the default; PyTorch's design): each rank owns whole
//    parameters; DDP all-reduces every gradient as usual, each rank steps its own parameters,
//    and each parameter is then broadcast from its owner. It needs no attach and works with any
//    optimizer.
//
// Note [ZeRO's reduce-scatter form]
// The slices: DDP's buckets (gradient_reducer.h, Note [Reduce-scattered buckets]) are planned so
// that none mixes param groups, and padded with zeros to a multiple of N; rank r owns the r-th
// of N equal slices of each. The wrapped optimizer gets, per param group, one flat 1-D tensor per
// bucket slice (zero_flat_shards.h), whose .grad is the slice of the averaged gradients. So
//  - the state per rank is 1/N of the whole plus at most N - 1 padding elements per bucket (and
//    one step count per bucket slice instead of one per parameter);
//  - the communication is a reduce-scatter and an all-gather per bucket, the two halves of the
//    ring all-reduce that DDP makes, so the bytes moved are the same as DDP's;
//  - exactness: the step must be elementwise (SGD, Adam, AdamW, RMSprop, Adagrad: every
//    optim::MultiTensorOptimizer; another optimizer is refused), so each element is updated as
//    an unsharded optimizer updates it. The averaged gradients are the sums an all-reduce makes:
//    with 2 ranks (one addition) the weights are bit-identical to DDP's; with more ranks MPI may
//    add in another order, a few ulps apart (tested within 1e-6 relative with 4).
// Gradients: after backward, .grad of the parameters holds this rank's own gradients, not the
// average (the averages live in the slices; that is what saves the all-reduce). So:
//  - clipping is clip_grad_norm_() of this optimizer: the global norm from the slices (a sum of
//    squares, all-reduced), within rounding of nn::utils::clip_grad_norm_'s over the averaged
//    gradients (it adds in another order);
//  - amp::GradScaler unscales the slices (stepped_tensors()) and their found-inf flag is
//    max-reduced over the ranks before the step, so every rank skips or steps alike;
//  - accumulation: backward passes under ddp.no_sync() accumulate .grad locally; the last pass
//    reduce-scatters the accumulated sum. A step without a reduce-scattering backward since the
//    last one is an error.
// The parameters are copied into the slices at each step (a load_state_dict of the model after
// construction is seen), and every element of every parameter is written back by the
// all-gather, so every replica ends the step with the same weights.
//
// Note [ZeRO shards whole parameters]
// In the whole-parameter form, the shard of a rank is a set of whole parameters, chosen greedily
// (largest first, each to the rank that owns the fewest bytes so far, ties to the lowest rank),
// as PyTorch's partition. So
//  - a rank's state is at most 1/N of the whole plus one parameter's state (one parameter is
//    never larger than one DDP bucket: a larger one gets a bucket of its own);
//  - every rank updates its parameters with the optimizer's own kernels on the gradients DDP
//    averaged, the very numbers and operations an unsharded optimizer on every rank uses: the
//    weights are bit-identical to DDP's for every world size and every optimizer, elementwise
//    or not.
// Gradients: DDP all-reduces them (every rank holds all of them), so clipping
// (nn::utils::clip_grad_norm_ over all parameters, or this optimizer's clip_grad_norm_), the
// GradScaler's unscale_ and gradient accumulation (ddp.no_sync()) work unchanged and give every
// rank the same result. The GradScaler's found-inf flag is still max-reduced over the ranks
// before the step, so the ranks agree to skip even if a gradient were to differ between them.
//
// At world size 1 both forms are the wrapped optimizer over every parameter (attach does
// nothing).
//
// The options: this optimizer's param_groups() hold every parameter with the options that
// apply (the wrapped optimizer's defaults fill in groups without options); schedulers change
// them here, and each step copies them into the local optimizer. Parameter groups are fixed at
// construction (add_param_group afterwards is refused at the next step). state(param) is null:
// the state lives in local_optimizer().
//
// Checkpoints hold the whole, unsharded state in both forms (the layout of the wrapped
// optimizer's own state_dict, so a checkpoint loads into a plain optimizer and back, and into
// either form at any world size): consolidate_state_dict() (collective) gathers every rank's
// shard, after which state_dict() on the receiving rank returns it, until the next step.
// load_state_dict() takes a whole state, from any world size or from an unsharded optimizer,
// and keeps this rank's shard (every rank calls it; no collective).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/distributed/distributed_data_parallel.h"
#include "minidl/distributed/process_group.h"
#include "minidl/distributed/zero_flat_shards.h"
#include "minidl/optim/optimizer.h"

namespace minidl::distributed {

// How the state is sharded: see the two forms above.
enum class ZeroSharding {
  WholeParameters,  // Note [ZeRO shards whole parameters]
  ReduceScatter,    // Note [ZeRO's reduce-scatter form]
};
const char* zero_sharding_name(ZeroSharding sharding);

struct ZeroRedundancyOptimizerOptions {
  ZeroRedundancyOptimizerOptions() = default;
  // The group to shard over; null: default_process_group(the parameters' device). In the
  // reduce-scatter form it must be the DDP wrapper's group.
  MINIDL_ARG(std::shared_ptr<ProcessGroup>, process_group) = nullptr;
  MINIDL_ARG(ZeroSharding, sharding) = ZeroSharding::WholeParameters;
};

class ZeroRedundancyOptimizer final : public optim::Optimizer {
 public:
  // Makes the wrapped optimizer over this rank's share of each group (a group may be empty on a
  // rank: groups keep their positions, so options stay group by group). Called once, by the
  // constructor (in the reduce-scatter form over every parameter; attach() hands it the slices).
  using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(
      std::vector<optim::OptimizerParamGroup> groups)>;

  ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup> groups,
                          const OptimizerFactory& make_optimizer,
                          ZeroRedundancyOptimizerOptions options = {});
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const OptimizerFactory& make_optimizer,
                          ZeroRedundancyOptimizerOptions options = {});

  // The reduce-scatter form: makes `ddp` reduce-scatter its gradient buckets into the slices
  // this optimizer steps (ddp.reduce_scatter_gradients, for good: a plain optimizer needs a DDP
  // wrapper of its own), and gives the wrapped optimizer the slices. Once, before the first
  // step or load_state_dict, on every rank; `ddp` must outlive this optimizer's use and wrap a
  // model whose trainable parameters are exactly this optimizer's. Nothing to do (and allowed)
  // in the whole-parameter form and at world size 1.
  void attach(DistributedDataParallel& ddp);

  // The local optimizer's step over this rank's share, then every parameter made whole again
  // (all-gathered slices, or broadcast from the owners). Collective: every rank calls it.
  void step() override;
  // The same, skipped everywhere when `found_inf` is nonzero on any rank (it is max-reduced in
  // place first).
  void step_unless_found_inf(const Tensor& found_inf) override;

  // Scales the gradients that the next step uses so that their global 2-norm is at most
  // max_norm, as nn::utils::clip_grad_norm_ over every parameter (the same coefficient,
  // min(max_norm / (norm + 1e-6), 1), multiplied in even when 1); returns the norm before
  // clipping, a float32 [] on the parameters' device, the same on every rank. In the
  // reduce-scatter form it is computed from the slices (collective); else it is
  // nn::utils::clip_grad_norm_(parameters()), which needs no communication.
  Tensor clip_grad_norm_(double max_norm);

  // The tensors whose gradients step() reads: this rank's slices in the reduce-scatter form,
  // else the parameters. amp::GradScaler unscales these.
  std::vector<Tensor> stepped_tensors() const override;

  // Collective: gathers the whole state; state_dict() on rank `to` returns it until the next
  // step or load_state_dict(). Reads the device (a sync on CUDA); for checkpoints only.
  void consolidate_state_dict(int to = 0);
  // The whole state gathered by the last consolidate_state_dict(); an error on any other rank
  // or after a later step.
  optim::OptimizerStateDict state_dict() const override;
  // Keeps this rank's shard of a whole state (see above). Not collective.
  void load_state_dict(const optim::OptimizerStateDict& state_dict) override;

  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }
  const optim::Optimizer& local_optimizer() const { return *local_; }
  ZeroSharding sharding() const { return sharding_; }
  // The whole-parameter form (or world size 1): the rank that owns each parameter, by position
  // (param_groups() order); empty in the reduce-scatter form at world size > 1.
  const std::vector<int>& owners() const { return owners_; }
  // Bytes of the state tensors this rank holds.
  size_t local_state_bytes() const;

 protected:
  // The local optimizer checks its options at every step; these are only copies of them.
  void check_options(const optim::OptimizerOptions& /*options*/,
                     const std::string& /*where*/) const override {}
  void check_state_entry(const Tensor& param, const std::string& key, const Tensor& value,
                         const std::string& where) const override;
  const char* name() const override { return "ZeroRedundancyOptimizer"; }

 private:
  struct Parts;
  explicit ZeroRedundancyOptimizer(Parts parts);
  static Parts make_parts(std::vector<optim::OptimizerParamGroup> groups,
                          const OptimizerFactory& make_optimizer,
                          const ZeroRedundancyOptimizerOptions& options);

  // Reduce-scatter form at world size > 1 (else the whole-parameter path serves both).
  bool steps_slices() const {
    return sharding_ == ZeroSharding::ReduceScatter && group_->size() > 1;
  }
  // Throws unless attach() was called, naming `what`, in the reduce-scatter form.
  void check_attached(const char* what) const;
  void copy_options_to_local_optimizer();
  void broadcast_parameters();
  // The whole-parameter form's part of consolidate_state_dict: every owner's entries, by position.
  std::map<int64_t, optim::ParamState> gather_whole_parameter_state(
      const std::vector<Tensor>& params);
  void forget_consolidated_state() { consolidated_.reset(); }

  std::shared_ptr<ProcessGroup> group_;
  ZeroSharding sharding_;
  std::unique_ptr<optim::Optimizer> local_;
  std::unique_ptr<ZeroFlatShards> slices_;  // the reduce-scatter form, once attached
  std::vector<int> owners_;                 // by position
  std::optional<optim::OptimizerStateDict> consolidated_;
};

}  // namespace minidl::distributed
