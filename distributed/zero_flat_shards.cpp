#include "minidl/distributed/zero_flat_shards.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"

namespace minidl::distributed {

namespace {

// The parameter's elements in their logical (row-major) order, as the buckets hold them.
Tensor flat_elements(const Tensor& tensor) {
  return (tensor.is_contiguous() ? tensor : tensor.contiguous()).reshape({-1});
}

// How a state entry maps onto a slice: one value per element of its parameter (moments,
// momentum), or one scalar per parameter (a step count), the same for every parameter of a
// bucket since they always step together.
enum class EntryKind { kPerElement, kScalar };

}  // namespace

ZeroFlatShards::ZeroFlatShards(const GradientReducer& reducer, std::vector<Tensor> parameters,
                               std::shared_ptr<ProcessGroup> group)
    : parameters_(std::move(parameters)), group_(std::move(group)), reducer_(reducer) {
  std::unordered_map<const TensorImpl*, size_t> position_of;
  for (size_t position = 0; position < parameters_.size(); ++position)
    position_of.emplace(parameters_[position].unsafe_impl(), position);
  const auto world = static_cast<int64_t>(group_->size());
  const auto rank = static_cast<int64_t>(group_->rank());
  NoGradGuard no_grad;
  for (const GradientReducer::ShardedBucket& bucket : reducer.sharded_buckets()) {
    Slice& slice = slices_.emplace_back();
    slice.group = bucket.key;
    slice.buffer = bucket.buffer;
    const int64_t slice_numel = bucket.buffer.numel() / world;
    const int64_t begin = rank * slice_numel, end = begin + slice_numel;
    slice.values = zeros({slice_numel}, bucket.buffer.options());
    slice.values.requires_grad_();
    slice.values.set_grad(bucket.shard);
    for (size_t k = 0; k < bucket.parameters.size(); ++k) {
      const auto found = position_of.find(bucket.parameters[k].unsafe_impl());
      MINIDL_INTERNAL_ASSERT(found != position_of.end(),
                             "a bucket's parameter is not the optimizer's");
      const int64_t offset = bucket.offsets[k];
      slice.positions.push_back(found->second);
      slice.offsets.push_back(offset);
      const int64_t low = std::max(offset, begin);
      const int64_t high = std::min(offset + bucket.parameters[k].numel(), end);
      if (low < high)
        slice.pieces.push_back({.position = found->second,
                                .param_begin = low - offset,
                                .slice_begin = low - begin,
                                .length = high - low});
    }
  }
  int groups = 0;
  for (const Slice& slice : slices_) groups = std::max(groups, slice.group + 1);
  for (int g = 0; g < groups; ++g)
    for (size_t i = 0; i < slices_.size(); ++i)
      if (slices_[i].group == g) {
        local_order_.push_back(slices_[i].values);
        slice_of_local_.push_back(i);
      }
}

std::vector<std::vector<Tensor>> ZeroFlatShards::slices_by_group(size_t group_count) const {
  std::vector<std::vector<Tensor>> by_group(group_count);
  for (const Slice& slice : slices_) {
    MINIDL_INTERNAL_ASSERT(static_cast<size_t>(slice.group) < group_count, "bucket key ",
                           slice.group, " beyond the ", group_count, " param groups");
    by_group[static_cast<size_t>(slice.group)].push_back(slice.values);
  }
  return by_group;
}

void ZeroFlatShards::take_gradients(const char* where) {
  MINIDL_CHECK(reducer_.finished_passes() > passes_taken_, where,
               ": no backward pass has reduce-scattered the gradients since the last step; ",
               "expected loss.backward() through DistributedDataParallel (the last one of an ",
               "accumulated step outside no_sync()) before each step");
  passes_taken_ = reducer_.finished_passes();
}

void ZeroFlatShards::copy_parameters_into_slices() {
  NoGradGuard no_grad;
  for (Slice& slice : slices_)
    for (const Piece& piece : slice.pieces)
      slice.values.narrow(0, piece.slice_begin, piece.length)
          .copy_(flat_elements(parameters_[piece.position])
                     .narrow(0, piece.param_begin, piece.length));
}

void ZeroFlatShards::all_gather_parameters() {
  NoGradGuard no_grad;
  std::vector<std::shared_ptr<Work>> works;
  for (Slice& slice : slices_)
    works.push_back(group_->all_gather_async(slice.buffer, slice.values));
  for (const std::shared_ptr<Work>& work : works) work->wait();
  for (Slice& slice : slices_) {
    for (size_t k = 0; k < slice.positions.size(); ++k) {
      Tensor param = parameters_[slice.positions[k]];
      param.copy_(make_view(slice.buffer, param.sizes(), contiguous_strides(param.sizes()),
                            slice.buffer.storage_offset() + slice.offsets[k]));
    }
    // The padding must stay zero: the next backward's gradients leave it alone, and their norm
    // counts it.
    const int64_t used = slice.offsets.back() + parameters_[slice.positions.back()].numel();
    if (used < slice.buffer.numel())
      slice.buffer.narrow(0, used, slice.buffer.numel() - used).zero_();
  }
}

Tensor ZeroFlatShards::local_squared_gradient_norm() const {
  NoGradGuard no_grad;
  const Device device = slices_.empty() ? Device(kCPU) : slices_.front().values.device();
  Tensor total = zeros({}, TensorOptions(kFloat32).device(device));
  for (const Slice& slice : slices_) {
    const Tensor grad = slice.values.grad();
    const Tensor norm = (grad.dtype() == kFloat32 ? grad : grad.to(kFloat32)).norm();
    total = total.add(norm.square());
  }
  return total;
}

ZeroFlatShards::StateByPosition ZeroFlatShards::whole_state(const StateByPosition& local) {
  NoGradGuard no_grad;
  StateByPosition whole;
  for (size_t l = 0; l < local_order_.size(); ++l) {
    const auto found = local.find(static_cast<int64_t>(l));
    if (found == local.end()) continue;  // not stepped yet: on no rank (they step together)
    const Slice& slice = slices_[slice_of_local_[l]];
    for (const auto& [key, value] : found->second) {
      if (value.dim() == 0) {
        for (size_t position : slice.positions)
          whole[static_cast<int64_t>(position)].emplace(key, value.clone());
        continue;
      }
      MINIDL_INTERNAL_ASSERT(value.numel() == slice.values.numel(), "state entry '", key,
                             "' of a slice has ", value.numel(), " elements, the slice ",
                             slice.values.numel());
      Tensor gathered = empty({slice.buffer.numel()}, value.options());
      group_->all_gather(gathered, value.contiguous());
      for (size_t k = 0; k < slice.positions.size(); ++k) {
        const Tensor& param = parameters_[slice.positions[k]];
        whole[static_cast<int64_t>(slice.positions[k])].emplace(
            key,
            gathered.narrow(0, slice.offsets[k], param.numel()).reshape(param.sizes()).clone());
      }
    }
  }
  return whole;
}

ZeroFlatShards::StateByPosition ZeroFlatShards::local_state(const StateByPosition& whole,
                                                            const std::string& where) const {
  StateByPosition local;
  for (size_t l = 0; l < local_order_.size(); ++l) {
    const Slice& slice = slices_[slice_of_local_[l]];
    // One state per slice: every parameter of the bucket must bring the same entries.
    const auto first = whole.find(static_cast<int64_t>(slice.positions.front()));
    std::set<std::string> keys;
    if (first != whole.end())
      for (const auto& entry : first->second) keys.insert(entry.first);
    for (size_t position : slice.positions) {
      const auto found = whole.find(static_cast<int64_t>(position));
      std::set<std::string> these;
      if (found != whole.end())
        for (const auto& entry : found->second) these.insert(entry.first);
      MINIDL_CHECK(these == keys, where, ": parameters ", slice.positions.front(), " and ",
                   position, " share a bucket of the reduce-scatter form, which keeps one state ",
                   "for its slice, but the state has ", keys.size(), " and ", these.size(),
                   " entries for them; expected the same entries for both (a state saved after ",
                   "steps in which some parameters had no gradient cannot be sharded so)");
    }
    if (keys.empty()) continue;
    optim::ParamState& out = local[static_cast<int64_t>(l)];
    for (const std::string& key : keys) {
      // Per element when it has its parameter's shape; a scalar (a step count) when 0-dim; a
      // bucket of 0-dim parameters is ambiguous, where only "step" is taken as a scalar.
      bool all_shaped = true, all_scalar = true;
      for (size_t position : slice.positions) {
        const Tensor& value = whole.at(static_cast<int64_t>(position)).at(key);
        all_shaped = all_shaped && value.sizes() == parameters_[position].sizes();
        all_scalar = all_scalar && value.dim() == 0;
      }
      MINIDL_CHECK(all_shaped || all_scalar, where, ": state entry '", key, "' of the parameters ",
                   "of a bucket is neither one value per element of each parameter nor one ",
                   "scalar per parameter; expected one of the two");
      const EntryKind kind = all_scalar && (!all_shaped || key == "step") ? EntryKind::kScalar
                                                                          : EntryKind::kPerElement;
      if (kind == EntryKind::kScalar) {
        out.emplace(key, whole.at(first->first).at(key));
        continue;
      }
      NoGradGuard no_grad;
      Tensor flat = zeros({slice.values.numel()}, slice.values.options());
      for (const Piece& piece : slice.pieces)
        flat.narrow(0, piece.slice_begin, piece.length)
            .copy_(flat_elements(whole.at(static_cast<int64_t>(piece.position)).at(key))
                       .narrow(0, piece.param_begin, piece.length));
      out.emplace(key, std::move(flat));
    }
  }
  return local;
}

}  // namespace minidl::distributed
