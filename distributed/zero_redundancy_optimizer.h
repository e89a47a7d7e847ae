#pragma once
// ZeroRedundancyOptimizer: ZeRO stage 1, as torch.distributed.optim.ZeroRedundancyOptimizer.
// It wraps an optimizer and shards its state over the ranks of a process group: each rank
// keeps the state (momentum buffers, Adam's moments) of its own share of the parameters only,
// steps only those, and then every parameter is broadcast from the rank that owns it, so every
// replica ends the step with the same weights. The optimizer state per rank is about 1/N of
// the unsharded state.
//
//   distributed::DistributedDataParallel ddp(model);          // gradients averaged as usual
//   distributed::ZeroRedundancyOptimizer optimizer(
//       model->parameters(), [](std::vector<optim::OptimizerParamGroup> groups) {
//         return std::make_unique<optim::AdamW>(std::move(groups), optim::AdamWOptions(1e-3));
//       });
//   ...loss.backward(); optimizer.step();                      // as any optimizer
//
// Note [ZeRO shards whole parameters]
// The shard of a rank is a set of whole parameters, chosen greedily (largest first, each to the
// rank that owns the fewest bytes so far, ties to the lowest rank), as PyTorch's partition. So
//  - a rank's state is at most 1/N of the whole plus one parameter's state (one parameter is
//    never larger than one DDP bucket: a larger one gets a bucket of its own);
//  - every rank updates its parameters with the optimizer's own kernels on the gradients DDP
//    averaged, the very numbers and operations an unsharded optimizer on every rank uses: the
//    weights are bit-identical to DDP's for every world size and every optimizer, elementwise
//    or not. A flat partition (element ranges of one flat buffer) would split a parameter
//    between ranks and need reduce-scattered gradients laid out to match; it balances better
//    but buys nothing in exactness, and the saving it adds (gradients) is not ZeRO-1's.
// Gradients: DDP all-reduces them (every rank holds all of them), so clipping
// (nn::utils::clip_grad_norm_ over all parameters), the GradScaler's unscale_ and gradient
// accumulation (ddp.no_sync()) work unchanged and give every rank the same result. The
// GradScaler's found-inf flag is still max-reduced over the ranks before the step, so the ranks
// agree to skip even if a gradient were to differ between them.
//
// The options: this optimizer's param_groups() hold every parameter with the options that
// apply (the wrapped optimizer's defaults fill in groups without options); schedulers change
// them here, and each step copies them into the local optimizer. Parameter groups are fixed at
// construction (add_param_group afterwards is refused at the next step). state(param) is null:
// the state lives in local_optimizer().
//
// Checkpoints hold the whole, unsharded state (the layout of the wrapped optimizer's own
// state_dict, so a checkpoint loads into a plain optimizer and back): consolidate_state_dict()
// (collective) gathers every rank's shard, after which state_dict() on the receiving rank
// returns it, until the next step. load_state_dict() takes a whole state, from any world size or
// from an unsharded optimizer, and keeps this rank's shard (every rank calls it; no collective).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/distributed/process_group.h"
#include "minidl/optim/optimizer.h"

namespace minidl::distributed {

struct ZeroRedundancyOptimizerOptions {
  ZeroRedundancyOptimizerOptions() = default;
  // The group to shard over; null: default_process_group(the parameters' device).
  MINIDL_ARG(std::shared_ptr<ProcessGroup>, process_group) = nullptr;
};

class ZeroRedundancyOptimizer final : public optim::Optimizer {
 public:
  // Makes the wrapped optimizer over this rank's share of each group (a group may be empty on a
  // rank: groups keep their positions, so options stay group by group).
  using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(
      std::vector<optim::OptimizerParamGroup> groups)>;

  ZeroRedundancyOptimizer(std::vector<optim::OptimizerParamGroup> groups,
                          const OptimizerFactory& make_optimizer,
                          ZeroRedundancyOptimizerOptions options = {});
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const OptimizerFactory& make_optimizer,
                          ZeroRedundancyOptimizerOptions options = {});

  // The local optimizer's step over this rank's parameters, then every parameter broadcast
  // from its owner. Collective: every rank calls it.
  void step() override;
  // The same, skipped everywhere when `found_inf` is nonzero on any rank (it is max-reduced in
  // place first).
  void step_unless_found_inf(const Tensor& found_inf) override;

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
  // The rank that owns each parameter, by position (param_groups() order).
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

  void copy_options_to_local_optimizer();
  void broadcast_parameters();
  void forget_consolidated_state() { consolidated_.reset(); }

  std::shared_ptr<ProcessGroup> group_;
  std::unique_ptr<optim::Optimizer> local_;
  std::vector<int> owners_;  // by position
  std::optional<optim::OptimizerStateDict> consolidated_;
};

}  // namespace minidl::distributed
