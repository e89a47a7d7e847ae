#include "minidl/distributed/gradient_reducer.h"

#include <spdlog/spdlog.h>

#include <map>
#include <sstream>
#include <tuple>

#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/error.h"
#include "minidl/core/logging.h"
#include "minidl/core/profiler.h"

namespace minidl::distributed {

GradientReducer::GradientReducer(NamedParameters parameters, std::shared_ptr<ProcessGroup> group,
                                 size_t bucket_bytes, bool find_unused_parameters)
    : parameters_(std::move(parameters)),
      group_(std::move(group)),
      bucket_bytes_(bucket_bytes),
      find_unused_parameters_(find_unused_parameters) {
  MINIDL_CHECK(group_ != nullptr, "GradientReducer: expected a process group, got null");
  ready_.assign(parameters_.size(), false);
  for (const auto& [name, parameter] : parameters_)
    MINIDL_CHECK(parameter.requires_grad() && parameter.is_leaf(), "GradientReducer: parameter '",
                 name, "' must be a leaf that requires grad");
  plan_buckets(std::vector<int>(parameters_.size(), 0));
  for (size_t i = 0; i < parameters_.size(); ++i)
    hook_handles_.push_back(parameters_[i].second.register_post_accumulate_grad_hook(
        [this, i](const Tensor&) { on_gradient_ready(i); }));
  logger().debug("GradientReducer: {} parameters in {} buckets of at most {} bytes",
                 parameters_.size(), buckets_.size(), bucket_bytes);
}

void GradientReducer::plan_buckets(const std::vector<int>& bucket_keys) {
  buckets_.clear();
  slots_.assign(parameters_.size(), Slot{});
  // Reverse registration order; one open bucket per (key, dtype, device) at a time.
  std::map<std::tuple<int, DType, DeviceType, int>, size_t> open_bucket;
  std::vector<size_t> bucket_bytes_used;
  for (size_t i = parameters_.size(); i-- > 0;) {
    const Tensor& parameter = parameters_[i].second;
    const auto key = std::make_tuple(bucket_keys[i], parameter.dtype(), parameter.device().type,
                                     parameter.device().index);
    auto open = open_bucket.find(key);
    if (open == open_bucket.end() ||
        (bucket_bytes_used[open->second] > 0 &&
         bucket_bytes_used[open->second] + parameter.nbytes() > bucket_bytes_)) {
      buckets_.emplace_back();
      buckets_.back().key = bucket_keys[i];
      bucket_bytes_used.push_back(0);
      open = open_bucket.insert_or_assign(key, buckets_.size() - 1).first;
    }
    Bucket& bucket = buckets_[open->second];
    slots_[i] = {open->second, bucket.parameters.size()};
    bucket.offsets.push_back(bucket.parameters.empty()
                                 ? 0
                                 : bucket.offsets.back() +
                                       parameters_[bucket.parameters.back()].second.numel());
    bucket.parameters.push_back(i);
    bucket_bytes_used[open->second] += parameter.nbytes();
  }
  const auto world = static_cast<int64_t>(group_->size());
  for (Bucket& bucket : buckets_) {
    const Tensor& first = parameters_[bucket.parameters.front()].second;
    int64_t elements = bucket.offsets.back() + parameters_[bucket.parameters.back()].second.numel();
    // Note [Reduce-scattered buckets]: zeros pad the buffer to N equal slices.
    if (reduce_scatter_) elements = (elements + world - 1) / world * world;
    const TensorOptions options = TensorOptions(first.dtype()).device(first.device());
    bucket.buffer = zeros({elements}, options);
    if (reduce_scatter_) bucket.shard = zeros({elements / world}, options);
    bucket.pending = bucket.parameters.size();
  }
}

void GradientReducer::reduce_scatter_into_shards(const std::vector<int>& bucket_keys) {
  MINIDL_CHECK(!pass_active_, "DistributedDataParallel: cannot switch to reduce-scattered ",
               "gradients during a backward pass");
  MINIDL_CHECK(bucket_keys.size() == parameters_.size(), "GradientReducer: expected ",
               parameters_.size(), " bucket keys, one per parameter, got ", bucket_keys.size());
  reduce_scatter_ = true;
  plan_buckets(bucket_keys);
  logger().debug("GradientReducer: {} parameters in {} reduce-scattered buckets",
                 parameters_.size(), buckets_.size());
}

std::vector<GradientReducer::ShardedBucket> GradientReducer::sharded_buckets() const {
  MINIDL_INTERNAL_ASSERT(reduce_scatter_, "sharded_buckets() before reduce_scatter_into_shards()");
  std::vector<ShardedBucket> sharded;
  for (const Bucket& bucket : buckets_) {
    ShardedBucket& out = sharded.emplace_back();
    for (size_t i : bucket.parameters) out.parameters.push_back(parameters_[i].second);
    out.offsets = bucket.offsets;
    out.key = bucket.key;
    out.buffer = bucket.buffer;
    out.shard = bucket.shard;
  }
  return sharded;
}

GradientReducer::~GradientReducer() {
  for (size_t i = 0; i < parameters_.size(); ++i)
    Tensor(parameters_[i].second).remove_post_accumulate_grad_hook(hook_handles_[i]);
  try {
    wait_for_launched(false);
  } catch (...) {
  }
}

Tensor GradientReducer::bucket_view(size_t parameter) const {
  const Slot& slot = slots_[parameter];
  const Bucket& bucket = buckets_[slot.bucket];
  const Tensor& shape_of = parameters_[parameter].second;
  return make_view(bucket.buffer, shape_of.sizes(), contiguous_strides(shape_of.sizes()),
                   bucket.buffer.storage_offset() + bucket.offsets[slot.position]);
}

void GradientReducer::on_gradient_ready(size_t parameter) {
  if (!sync_enabled_) return;
  if (!pass_active_) {
    pass_active_ = true;
    autograd::queue_callback([this] { finish_pass(); });
  }
  MINIDL_CHECK(!ready_[parameter], "DistributedDataParallel: parameter '",
               parameters_[parameter].first, "' got its gradient twice in one backward pass");
  copy_into_bucket(parameter, parameters_[parameter].second.grad());
  ready_[parameter] = true;
  --buckets_[slots_[parameter].bucket].pending;
  launch_ready_buckets();
}

void GradientReducer::copy_into_bucket(size_t parameter, const Tensor& gradient) {
  NoGradGuard no_grad;
  Tensor view = bucket_view(parameter);
  if (gradient.defined())
    view.copy_(gradient);
  else
    view.zero_();
}

void GradientReducer::launch_ready_buckets() {
  while (next_bucket_to_launch_ < buckets_.size() &&
         buckets_[next_bucket_to_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_bucket_to_launch_++];
    if (reduce_scatter_) {
      const ProfileScope launch("reduce_scatter");
      bucket.work = group_->reduce_scatter_async(bucket.shard, bucket.buffer, ReduceOp::Average);
    } else {
      const ProfileScope launch("all_reduce");
      bucket.work = group_->all_reduce_async(bucket.buffer, ReduceOp::Average);
    }
  }
}

void GradientReducer::finish() {
  if (pass_active_) finish_pass();
}

void GradientReducer::finish_pass() {
  if (!pass_active_) return;
  try {
    if (next_bucket_to_launch_ < buckets_.size()) handle_unused_parameters();
    wait_for_launched(true);
    ++finished_passes_;
    // Note [Reduce-scattered buckets]: the averages stay in the shards.
    if (reduce_scatter_) {
      reset_pass();
      return;
    }
    NoGradGuard no_grad;
    for (size_t i = 0; i < parameters_.size(); ++i) {
      Tensor parameter = parameters_[i].second;
      Tensor averaged = bucket_view(i);
      Tensor gradient = parameter.grad();
      if (gradient.defined())
        gradient.copy_(averaged);
      else
        parameter.set_grad(averaged.clone());
    }
  } catch (...) {
    reset_pass();
    throw;
  }
  reset_pass();
}

void GradientReducer::handle_unused_parameters() {
  std::vector<size_t> unused;
  for (size_t i = 0; i < parameters_.size(); ++i)
    if (!ready_[i]) unused.push_back(i);
  if (!find_unused_parameters_) {
    std::ostringstream names;
    for (size_t k = 0; k < unused.size(); ++k)
      names << (k ? ", " : "") << parameters_[unused[k]].first;
    // The buckets already launched are launched on every rank that has the same unused
    // parameters: finish them, so that no collective is left half done.
    wait_for_launched(false);
    MINIDL_CHECK(false, "DistributedDataParallel: ", unused.size(), " parameter",
                 unused.size() > 1 ? "s" : "",
                 " got no gradient in this backward pass: ", names.str(),
                 ". Every parameter must contribute to the loss on every rank; ",
                 "if some do not in some steps, set ",
                 "DistributedDataParallelOptions().find_unused_parameters(true)");
  }
  for (size_t i : unused) {
    copy_into_bucket(i, parameters_[i].second.grad());
    ready_[i] = true;
    --buckets_[slots_[i].bucket].pending;
  }
  launch_ready_buckets();
}

void GradientReducer::wait_for_launched(bool rethrow) {
  std::string first_error;
  for (Bucket& bucket : buckets_) {
    if (!bucket.work) continue;
    std::shared_ptr<Work> work = std::move(bucket.work);
    bucket.work = nullptr;
    try {
      work->wait();
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (rethrow && !first_error.empty()) throw Error(first_error);
}

void GradientReducer::reset_pass() {
  pass_active_ = false;
  next_bucket_to_launch_ = 0;
  ready_.assign(parameters_.size(), false);
  for (Bucket& bucket : buckets_) {
    bucket.pending = bucket.parameters.size();
    bucket.work = nullptr;
  }
}

std::vector<std::vector<std::string>> GradientReducer::bucket_parameter_names() const {
  std::vector<std::vector<std::string>> names;
  for (const Bucket& bucket : buckets_) {
    names.emplace_back();
    for (size_t i : bucket.parameters) names.back().push_back(parameters_[i].first);
  }
  return names;
}

}  // namespace minidl::distributed
