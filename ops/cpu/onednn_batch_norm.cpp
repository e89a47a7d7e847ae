// Batch normalisation in training on oneDNN's primitives (ops/cpu/onednn_batch_norm.h): the
// forward pass with the batch's statistics, and its backward pass. Primitives are made once per
// (direction, shape, affine parameters, eps) and kept (Note [oneDNN primitive cache] in
// ops/cpu/onednn_context.h); a shape that oneDNN takes only with its reference kernel is
// remembered as refused and left to minidl's own.
#include "minidl/ops/cpu/onednn_batch_norm.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "minidl/core/logging.h"
#include "minidl/ops/cpu/onednn_context.h"
#include "minidl/ops/norm_math.h"
#include "minidl/ops/onednn.h"

namespace minidl::cpu {

namespace {

using dnnl::memory;

enum class Direction { Forward, Backward };

struct BatchNormKey {
  Direction direction;
  memory::data_type data_type;  // of the activations; the per-channel tensors are float32
  int64_t batch, channels, height, width;
  bool scale, shift;  // whether the weight, the bias is there
  float eps;          // fixed in a primitive's descriptor
  bool operator==(const BatchNormKey&) const = default;
};

struct BatchNormKeyHash {
  size_t operator()(const BatchNormKey& k) const {
    size_t h = std::hash<float>{}(k.eps);
    for (int64_t v :
         {static_cast<int64_t>(k.direction), static_cast<int64_t>(k.data_type), k.batch, k.channels,
          k.height, k.width, static_cast<int64_t>(k.scale), static_cast<int64_t>(k.shift)})
      h = h * 1000003u ^ std::hash<int64_t>{}(v);
    return h;
  }
};

struct BatchNormPlan {
  dnnl::primitive primitive;
  size_t scratchpad_bytes = 0;
};

memory::desc activation_desc(const BatchNormKey& k) {
  return memory::desc({k.batch, k.channels, k.height, k.width}, k.data_type,
                      memory::format_tag::nhwc);
}

memory::desc channel_desc(int64_t channels) {
  return memory::desc({channels}, memory::data_type::f32, memory::format_tag::x);
}

dnnl::normalization_flags flags_of(const BatchNormKey& k) {
  auto flags = dnnl::normalization_flags::none;
  if (k.scale) flags |= dnnl::normalization_flags::use_scale;
  if (k.shift) flags |= dnnl::normalization_flags::use_shift;
  return flags;
}

dnnl::batch_normalization_forward::primitive_desc forward_descriptor(const BatchNormKey& k) {
  const dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_training,
                                                     activation_desc(k), k.eps, flags_of(k));
  return {desc, onednn::user_scratchpad(), onednn::engine()};
}

// The gradients of the weight and bias too where they are there (prop_kind::backward), else of
// the input alone.
dnnl::batch_normalization_backward::primitive_desc backward_descriptor(const BatchNormKey& k) {
  const auto prop = k.scale || k.shift ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data;
  const dnnl::batch_normalization_backward::desc desc(prop, activation_desc(k), activation_desc(k),
                                                      k.eps, flags_of(k));
  BatchNormKey forward = k;
  forward.direction = Direction::Forward;
  return {desc, onednn::user_scratchpad(), onednn::engine(), forward_descriptor(forward)};
}

// oneDNN's vectorised kernels ("bnorm_jit", "bnorm_tbb_jit"), not its plain loops ("ncsp_bnorm",
// "bnorm_ref"), which are slower than minidl's own (ops/cpu/onednn_batch_norm.h).
bool is_vectorised(const std::string& implementation) {
  return implementation.find("jit") != std::string::npos;
}

template <class Descriptor, class Primitive>
std::shared_ptr<const BatchNormPlan> make_plan(const Descriptor& pd, const BatchNormKey& k) {
  const std::string implementation = pd.impl_info_str();
  if (!is_vectorised(implementation)) {
    logger().debug("batch_norm: oneDNN has only {} for {}x{}x{}x{}; using minidl's kernels",
                   implementation, k.batch, k.channels, k.height, k.width);
    return nullptr;
  }
  auto plan = std::make_shared<BatchNormPlan>();
  plan->primitive = Primitive(pd);
  plan->scratchpad_bytes = pd.scratchpad_desc().get_size();
  onednn::count_primitive();
  logger().debug("batch_norm: oneDNN {} for {}x{}x{}x{}, direction {}", implementation, k.batch,
                 k.channels, k.height, k.width, static_cast<int>(k.direction));
  return plan;
}

// Note [oneDNN primitive cache]: nullptr for a key oneDNN refused.
std::shared_ptr<const BatchNormPlan> plan_for(const BatchNormKey& key) {
  static onednn::PlanCache<BatchNormKey, BatchNormPlan, BatchNormKeyHash> plans("batch_norm");
  return plans.get(key, [](const BatchNormKey& k) -> std::shared_ptr<const BatchNormPlan> {
    if (k.direction == Direction::Forward)
      return make_plan<dnnl::batch_normalization_forward::primitive_desc,
                       dnnl::batch_normalization_forward>(forward_descriptor(k), k);
    return make_plan<dnnl::batch_normalization_backward::primitive_desc,
                     dnnl::batch_normalization_backward>(backward_descriptor(k), k);
  });
}

// Whether oneDNN may take `t`: float32, or bfloat16 on a CPU with bfloat16 instructions; 4-D,
// dense in channels-last (see the header).
bool takes(const Tensor& t) {
  const bool dtype =
      t.dtype() == kFloat32 || (t.dtype() == kBFloat16 && onednn_bfloat16_instructions());
  return onednn_enabled() && dtype && t.dim() == 4 && t.is_contiguous(MemoryFormat::ChannelsLast) &&
         t.numel() > 0;
}

// A per-channel tensor as oneDNN takes it: float32 (a bfloat16 input's weight may be bfloat16).
Tensor per_channel_float32(const Tensor& t) {
  return t.defined() ? t.detach().to(kFloat32).contiguous() : Tensor();
}

BatchNormKey key_for(Direction direction, const Tensor& input, bool scale, bool shift, double eps) {
  return {
      .direction = direction,
      .data_type = input.dtype() == kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32,
      .batch = input.size(0),
      .channels = input.size(1),
      .height = input.size(2),
      .width = input.size(3),
      .scale = scale,
      .shift = shift,
      .eps = static_cast<float>(eps)};
}

// Memory for `desc` at `t`'s data (oneDNN does not own it).
memory wrap(const memory::desc& desc, const Tensor& t) { return onednn::wrap(desc, t.data_ptr()); }

// A scratchpad of the plan's size, from minidl's allocator (its block cache keeps it).
Tensor scratchpad_for(const BatchNormPlan& plan) {
  return empty({static_cast<int64_t>(plan.scratchpad_bytes)}, kUInt8);
}

memory wrap_scratchpad(const Tensor& bytes) {
  return onednn::scratchpad_memory(bytes.data_ptr(), static_cast<size_t>(bytes.numel()));
}

// invstd from oneDNN's variance, and the running statistics' update, with the formulas of
// norm::finish_statistics (the running variance takes the unbiased variance, count / (count - 1)
// times the biased one).
void finish_statistics(const OnednnBatchNormStatistics& result, const Tensor& running_mean,
                       const Tensor& running_var, int64_t count, float momentum, float eps) {
  const float* mean = result.mean.data_ptr<float>();
  const float* variance = result.variance.data_ptr<float>();
  float* invstd = result.invstd.data_ptr<float>();
  float* running_mean_data = running_mean.defined() ? running_mean.data_ptr<float>() : nullptr;
  float* running_var_data = running_var.defined() ? running_var.data_ptr<float>() : nullptr;
  const float unbiased = static_cast<float>(count) / static_cast<float>(count - 1);
  for (int64_t c = 0; c < result.mean.numel(); ++c) {
    invstd[c] = norm::inverse_std(variance[c], eps);
    if (running_mean_data)
      running_mean_data[c] = norm::running_update(running_mean_data[c], mean[c], momentum);
    if (running_var_data)
      running_var_data[c] =
          norm::running_update(running_var_data[c], variance[c] * unbiased, momentum);
  }
}

}  // namespace

std::optional<OnednnBatchNormStatistics> onednn_batch_norm_forward(
    const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
    const Tensor& running_var, double momentum, double eps) {
  if (!takes(input)) return std::nullopt;
  const BatchNormKey key =
      key_for(Direction::Forward, input, weight.defined(), bias.defined(), eps);
  const auto plan = plan_for(key);
  if (!plan) return std::nullopt;
  const int64_t channels = input.size(1);
  OnednnBatchNormStatistics result{empty(input.sizes(), input.dtype(), MemoryFormat::ChannelsLast),
                                   empty({channels}, kFloat32), empty({channels}, kFloat32),
                                   empty({channels}, kFloat32)};
  const memory::desc activations = activation_desc(key), per_channel = channel_desc(channels);
  const Tensor scratchpad = scratchpad_for(*plan);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(activations, input)},
                                       {DNNL_ARG_DST, wrap(activations, result.output)},
                                       {DNNL_ARG_MEAN, wrap(per_channel, result.mean)},
                                       {DNNL_ARG_VARIANCE, wrap(per_channel, result.variance)},
                                       {DNNL_ARG_SCRATCHPAD, wrap_scratchpad(scratchpad)}};
  const Tensor scale = per_channel_float32(weight), shift = per_channel_float32(bias);
  if (scale.defined()) args.emplace(DNNL_ARG_SCALE, wrap(per_channel, scale));
  if (shift.defined()) args.emplace(DNNL_ARG_SHIFT, wrap(per_channel, shift));
  onednn::execute(plan->primitive, args);
  finish_statistics(result, running_mean, running_var, input.numel() / channels,
                    static_cast<float>(momentum), static_cast<float>(eps));
  return result;
}

std::optional<OnednnBatchNormGradients> onednn_batch_norm_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& mean, const Tensor& variance,
    const Tensor& weight, bool has_bias, double eps) {
  if (!takes(input) || !takes(grad_output) || grad_output.dtype() != input.dtype())
    return std::nullopt;
  const BatchNormKey key = key_for(Direction::Backward, input, weight.defined(), has_bias, eps);
  const auto plan = plan_for(key);
  if (!plan) return std::nullopt;
  const int64_t channels = input.size(1);
  OnednnBatchNormGradients result{empty(input.sizes(), input.dtype(), MemoryFormat::ChannelsLast),
                                  weight.defined() ? empty({channels}, kFloat32) : Tensor(),
                                  has_bias ? empty({channels}, kFloat32) : Tensor()};
  const memory::desc activations = activation_desc(key), per_channel = channel_desc(channels);
  const Tensor scratchpad = scratchpad_for(*plan);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(activations, input)},
                                       {DNNL_ARG_DIFF_DST, wrap(activations, grad_output)},
                                       {DNNL_ARG_MEAN, wrap(per_channel, mean)},
                                       {DNNL_ARG_VARIANCE, wrap(per_channel, variance)},
                                       {DNNL_ARG_DIFF_SRC, wrap(activations, result.grad_input)},
                                       {DNNL_ARG_SCRATCHPAD, wrap_scratchpad(scratchpad)}};
  const Tensor scale = per_channel_float32(weight);
  if (scale.defined()) {
    args.emplace(DNNL_ARG_SCALE, wrap(per_channel, scale));
    args.emplace(DNNL_ARG_DIFF_SCALE, wrap(per_channel, result.grad_weight));
  }
  // oneDNN 2.6 refuses to run a backward pass whose forward had a shift without one, though no
  // gradient depends on its values ("could not execute a primitive").
  const Tensor unread_shift = has_bias ? zeros({channels}, kFloat32) : Tensor();
  if (has_bias) {
    args.emplace(DNNL_ARG_SHIFT, wrap(per_channel, unread_shift));
    args.emplace(DNNL_ARG_DIFF_SHIFT, wrap(per_channel, result.grad_bias));
  }
  onednn::execute(plan->primitive, args);
  return result;
}

}  // namespace minidl::cpu
