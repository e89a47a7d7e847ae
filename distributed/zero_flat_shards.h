#pragma once
// ZeroFlatShards: this rank's slices of DDP's reduce-scattered gradient buckets, which
// ZeroRedundancyOptimizer's reduce-scatter form steps (Note [ZeRO's reduce-scatter form] in
// zero_redundancy_optimizer.h), and the conversions between their optimizer state and the
// whole, per-parameter state that checkpoints hold.
//
// Shapes: a bucket holds P elements (padded with zeros to a multiple of the world size N);
// rank r's slice of it is the elements [r * P / N, (r + 1) * P / N), a 1-D tensor `values` of
// P / N elements whose .grad is the bucket's reduce-scattered `shard` (the average over ranks).
// A slice may start or end inside a parameter: its pieces say which elements of which
// parameter it holds.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/distributed/gradient_reducer.h"
#include "minidl/distributed/process_group.h"
#include "minidl/optim/optimizer.h"
#include "minidl/optim/optimizer_state_dict.h"

namespace minidl::distributed {

class ZeroFlatShards {
 public:
  using StateByPosition = std::map<int64_t, optim::ParamState>;  // OptimizerStateDict::state

  // `parameters`: the optimizer's, by position (param group by param group). `reducer` has
  // reduce-scattered buckets whose keys are the param groups' indices.
  ZeroFlatShards(const GradientReducer& reducer, std::vector<Tensor> parameters,
                 std::shared_ptr<ProcessGroup> group);

  // Per param group, the slices of its buckets: the tensors the wrapped optimizer steps.
  std::vector<std::vector<Tensor>> slices_by_group(size_t group_count) const;
  // The same slices, in the wrapped optimizer's order (group by group).
  const std::vector<Tensor>& local_order() const { return local_order_; }

  // An error unless a synchronised backward finished since the last call (`where` names the
  // caller): the slices' gradients would be the last step's.
  void take_gradients(const char* where);
  // values <- this rank's elements of the parameters (they may have been loaded or changed).
  void copy_parameters_into_slices();
  // Every parameter <- the slices of every rank (one all-gather per bucket, through the
  // bucket's buffer, which is free between backward passes). Collective.
  void all_gather_parameters();
  // The sum of the squares of this rank's averaged gradients, a float32 [] on their device.
  Tensor local_squared_gradient_norm() const;

  // The whole state, by the optimizer's positions, from the wrapped optimizer's state of the
  // slices (`local`, by local position). Collective: every rank gets it.
  StateByPosition whole_state(const StateByPosition& local);
  // The wrapped optimizer's state of this rank's slices (by local position), cut from a whole
  // state by the optimizer's positions. `where` names the caller in errors.
  StateByPosition local_state(const StateByPosition& whole, const std::string& where) const;

 private:
  struct Piece {  // elements [param_begin, param_begin + length) of a parameter
    size_t position = 0;
    int64_t param_begin = 0;
    int64_t slice_begin = 0;  // where they sit in the slice
    int64_t length = 0;
  };
  struct Slice {
    int group = 0;
    Tensor values;                  // [P / N]; .grad is the bucket's shard
    Tensor buffer;                  // [P]: the bucket's gradient buffer, the all-gather's target
    std::vector<size_t> positions;  // every parameter of the bucket
    std::vector<int64_t> offsets;   // their element offsets in the bucket
    std::vector<Piece> pieces;      // those that overlap this rank's slice
  };

  std::vector<Tensor> parameters_;
  std::shared_ptr<ProcessGroup> group_;
  const GradientReducer& reducer_;
  std::vector<Slice> slices_;           // bucket order
  std::vector<Tensor> local_order_;     // group by group
  std::vector<size_t> slice_of_local_;  // local position -> index into slices_
  uint64_t passes_taken_ = 0;
};

}  // namespace minidl::distributed
