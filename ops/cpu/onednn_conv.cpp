// CPU convolutions on oneDNN's primitives (ops/cpu/onednn_conv.h): the forward pass, the
// input's gradient, and in bfloat16 the weight's and the bias's.
//
// Each call splits the batch into one contiguous share per minidl CPU thread and runs the
// primitive for the share's size on that thread (Note [oneDNN on minidl's threads] in
// ops/cpu/onednn_context.h). The tensors stay in their own layout (NCHW or channels-last); where
// oneDNN's fast kernels want another one (blocked channels, always for the weights), each share
// is reordered into a buffer of its thread and back, as PyTorch's oneDNN convolutions do for its
// plain tensors. Shares do not interact, so a result does not depend on the thread count.
//
// The primitives of each (direction, share size, geometry, dtype, layout) are made once and kept
// (Note [oneDNN primitive cache] in ops/cpu/onednn_context.h); a geometry oneDNN refuses goes to
// the im2col path.
#include "minidl/ops/cpu/onednn_conv.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "minidl/core/logging.h"
#include "minidl/core/parallel.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/cpu/onednn_context.h"
#include "minidl/ops/onednn.h"

namespace minidl::cpu {

namespace {

using dnnl::memory;
using Dims = memory::dims;

enum class Direction { Forward, BackwardData, BackwardWeights };

// Everything a convolution's primitives depend on; `batch` is one share's.
struct ConvKey {
  Direction direction;
  int64_t batch, in_channels, in_h, in_w, out_channels, kernel_h, kernel_w;
  int64_t stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w, groups;
  memory::data_type data_type;
  bool channels_last;
  bool bias;
  bool operator==(const ConvKey&) const = default;
};

struct ConvKeyHash {
  size_t operator()(const ConvKey& k) const {
    size_t h = static_cast<size_t>(k.direction);
    for (int64_t v : {k.batch, k.in_channels, k.in_h, k.in_w, k.out_channels, k.kernel_h,
                      k.kernel_w, k.stride_h, k.stride_w, k.padding_h, k.padding_w, k.dilation_h,
                      k.dilation_w, k.groups, static_cast<int64_t>(k.data_type),
                      static_cast<int64_t>(k.channels_last), static_cast<int64_t>(k.bias)})
      h = h * 1000003u ^ std::hash<int64_t>{}(v);
    return h;
  }
};

// One argument of a primitive: the layout minidl's tensor has, the layout the primitive wants,
// and the reorder between them when they differ.
struct Operand {
  memory::desc user;
  memory::desc wanted;
  std::optional<dnnl::reorder> reorder;  // user -> wanted for inputs, wanted -> user for outputs

  Operand(const memory::desc& user_desc, const memory::desc& wanted_desc, bool is_input)
      : user(user_desc), wanted(wanted_desc) {
    if (user == wanted) return;
    const auto from = is_input ? user : wanted, to = is_input ? wanted : user;
    reorder.emplace(dnnl::reorder::primitive_desc(onednn::engine(), from, onednn::engine(), to));
    onednn::count_primitive();
  }
  // Bytes of a buffer in the wanted layout (0 when the tensor's own memory is used).
  size_t buffer_bytes() const { return reorder ? wanted.get_size() : 0; }
};

// The primitive of one direction and share size, with its operands. Forward: src, weights, dst
// (and the bias, float32 in the tensor's layout). BackwardData: diff_dst, weights, diff_src.
// BackwardWeights: src, diff_dst, diff_weights (float32, written in the weights' plain layout;
// and the bias's, float32).
struct ConvPlan {
  dnnl::primitive primitive;
  std::vector<Operand> operands;  // the order above
  size_t scratchpad_bytes = 0;
};

// ---- geometry and layouts ----

Dims activation_dims(int64_t batch, int64_t channels, int64_t h, int64_t w) {
  return {batch, channels, h, w};
}

memory::format_tag activation_tag(bool channels_last) {
  return channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw;
}

Dims weight_dims(const ConvKey& k) {
  if (k.groups == 1) return {k.out_channels, k.in_channels, k.kernel_h, k.kernel_w};
  return {k.groups, k.out_channels / k.groups, k.in_channels / k.groups, k.kernel_h, k.kernel_w};
}

memory::format_tag weight_tag(const ConvKey& k) {
  return k.groups == 1 ? memory::format_tag::oihw : memory::format_tag::goihw;
}

int64_t output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

// oneDNN's padding on the far side: what makes its output size equal ours (which rounds down,
// so it may be less than the near side's padding).
int64_t far_padding(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  const int64_t out = output_size(in, kernel, stride, padding, dilation);
  return (out - 1) * stride + dilation * (kernel - 1) + 1 - in - padding;
}

struct ConvDescs {
  memory::desc src, weights, bias, dst;
  Dims strides, dilates, padding_l, padding_r;
};

// The descriptors of a convolution for `k`: activations in the tensors' layout when `plain`, else
// in whatever layout oneDNN prefers (format_tag::any); weights always in oneDNN's choice.
ConvDescs descs_for(const ConvKey& k, bool plain) {
  const int64_t out_h = output_size(k.in_h, k.kernel_h, k.stride_h, k.padding_h, k.dilation_h);
  const int64_t out_w = output_size(k.in_w, k.kernel_w, k.stride_w, k.padding_w, k.dilation_w);
  const auto activations = plain ? activation_tag(k.channels_last) : memory::format_tag::any;
  ConvDescs d;
  d.src = memory::desc(activation_dims(k.batch, k.in_channels, k.in_h, k.in_w), k.data_type,
                       activations);
  d.dst = memory::desc(activation_dims(k.batch, k.out_channels, out_h, out_w), k.data_type,
                       activations);
  d.weights = memory::desc(weight_dims(k), k.data_type, memory::format_tag::any);
  d.bias = memory::desc({k.out_channels}, memory::data_type::f32, memory::format_tag::x);
  d.strides = {k.stride_h, k.stride_w};
  d.dilates = {k.dilation_h - 1, k.dilation_w - 1};  // oneDNN counts the gaps
  d.padding_l = {k.padding_h, k.padding_w};
  d.padding_r = {far_padding(k.in_h, k.kernel_h, k.stride_h, k.padding_h, k.dilation_h),
                 far_padding(k.in_w, k.kernel_w, k.stride_w, k.padding_w, k.dilation_w)};
  return d;
}

dnnl::convolution_forward::primitive_desc forward_descriptor(const ConvKey& k, bool plain) {
  const ConvDescs d = descs_for(k, plain);
  const auto desc =
      k.bias ? dnnl::convolution_forward::desc(
                   dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.src,
                   d.weights, d.bias, d.dst, d.strides, d.dilates, d.padding_l, d.padding_r)
             : dnnl::convolution_forward::desc(
                   dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.src,
                   d.weights, d.dst, d.strides, d.dilates, d.padding_l, d.padding_r);
  return {desc, onednn::user_scratchpad(), onednn::engine()};
}

dnnl::convolution_backward_data::primitive_desc backward_data_descriptor(const ConvKey& k,
                                                                         bool plain) {
  const ConvDescs d = descs_for(k, plain);
  const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                                   d.weights, d.dst, d.strides, d.dilates,
                                                   d.padding_l, d.padding_r);
  return {desc, onednn::user_scratchpad(), onednn::engine(), forward_descriptor(k, plain)};
}

// The weight's gradient in float32 (summed over chunks of the batch in float32 too), the
// activations as in descs_for.
dnnl::convolution_backward_weights::primitive_desc backward_weights_descriptor(const ConvKey& k,
                                                                               bool plain) {
  const ConvDescs d = descs_for(k, plain);
  const memory::desc diff_weights(weight_dims(k), memory::data_type::f32, memory::format_tag::any);
  const auto desc = k.bias ? dnnl::convolution_backward_weights::desc(
                                 dnnl::algorithm::convolution_direct, d.src, diff_weights, d.bias,
                                 d.dst, d.strides, d.dilates, d.padding_l, d.padding_r)
                           : dnnl::convolution_backward_weights::desc(
                                 dnnl::algorithm::convolution_direct, d.src, diff_weights, d.dst,
                                 d.strides, d.dilates, d.padding_l, d.padding_r);
  return {desc, onednn::user_scratchpad(), onednn::engine(), forward_descriptor(k, plain)};
}

// oneDNN's own kernels (jit, brgemm) rather than its GEMM-based or reference ones.
bool is_direct_kernel(const std::string& implementation) {
  return implementation.rfind("jit", 0) == 0 || implementation.rfind("brg", 0) == 0;
}

// The descriptor in the tensors' own layout when oneDNN has a direct kernel for it (no reorder),
// else in oneDNN's preferred layout when that has one, else the first oneDNN made. Throws
// dnnl::error when oneDNN takes neither.
template <class MakeDescriptor>
auto choose_descriptor(const MakeDescriptor& make) {
  std::optional<decltype(make(true))> plain;
  try {
    plain.emplace(make(true));
    if (is_direct_kernel(plain->impl_info_str())) return *plain;
  } catch (const dnnl::error&) {
  }
  try {
    auto preferred = make(false);
    if (!plain || is_direct_kernel(preferred.impl_info_str())) return preferred;
  } catch (const dnnl::error&) {
    if (!plain) throw;
  }
  return *plain;
}

memory::desc user_activation(const memory::desc& wanted, bool channels_last) {
  return memory::desc(wanted.dims(), wanted.data_type(), activation_tag(channels_last));
}

memory::desc user_weights(const ConvKey& k, memory::data_type data_type) {
  return memory::desc(weight_dims(k), data_type, weight_tag(k));
}

std::shared_ptr<const ConvPlan> make_plan(const ConvKey& k) {
  auto plan = std::make_shared<ConvPlan>();
  const auto finish = [&](const auto& pd, dnnl::primitive primitive) {
    plan->primitive = std::move(primitive);
    plan->scratchpad_bytes = pd.scratchpad_desc().get_size();
    onednn::count_primitive();
    logger().debug("conv2d: oneDNN {} for {} samples of {}x{}x{} -> {} channels, direction {}",
                   pd.impl_info_str(), k.batch, k.in_channels, k.in_h, k.in_w, k.out_channels,
                   static_cast<int>(k.direction));
  };
  switch (k.direction) {
    case Direction::Forward: {
      const auto pd = choose_descriptor([&](bool plain) { return forward_descriptor(k, plain); });
      plan->operands = {
          Operand(user_activation(pd.src_desc(), k.channels_last), pd.src_desc(), true),
          Operand(user_weights(k, k.data_type), pd.weights_desc(), true),
          Operand(user_activation(pd.dst_desc(), k.channels_last), pd.dst_desc(), false)};
      finish(pd, dnnl::convolution_forward(pd));
      break;
    }
    case Direction::BackwardData: {
      const auto pd =
          choose_descriptor([&](bool plain) { return backward_data_descriptor(k, plain); });
      plan->operands = {
          Operand(user_activation(pd.diff_dst_desc(), k.channels_last), pd.diff_dst_desc(), true),
          Operand(user_weights(k, k.data_type), pd.weights_desc(), true),
          Operand(user_activation(pd.diff_src_desc(), k.channels_last), pd.diff_src_desc(), false)};
      finish(pd, dnnl::convolution_backward_data(pd));
      break;
    }
    case Direction::BackwardWeights: {
      const auto pd =
          choose_descriptor([&](bool plain) { return backward_weights_descriptor(k, plain); });
      // oneDNN's fallbacks for this direction (reference loops) are far slower than im2col.
      if (!is_direct_kernel(pd.impl_info_str()))
        throw dnnl::error(dnnl_unimplemented, "conv2d weight gradient: no direct kernel");
      plan->operands = {
          Operand(user_activation(pd.src_desc(), k.channels_last), pd.src_desc(), true),
          Operand(user_activation(pd.diff_dst_desc(), k.channels_last), pd.diff_dst_desc(), true),
          Operand(user_weights(k, memory::data_type::f32), pd.diff_weights_desc(), false)};
      finish(pd, dnnl::convolution_backward_weights(pd));
      break;
    }
  }
  return plan;
}

// Note [oneDNN primitive cache]: nullptr for a key oneDNN refused.
std::shared_ptr<const ConvPlan> plan_for(const ConvKey& key) {
  static onednn::PlanCache<ConvKey, ConvPlan, ConvKeyHash> plans("conv2d");
  return plans.get(key, make_plan);
}

// ---- running the shares ----

// Samples [first, first + size) of the batch.
struct Piece {
  int64_t first = 0;
  int64_t size = 0;
};

// The batch cut into one contiguous share per minidl CPU thread (at most one per sample).
std::vector<Piece> split_batch(int64_t batch) {
  const int64_t count = std::min<int64_t>(batch, get_num_threads());
  std::vector<Piece> shares;
  for (int64_t s = 0; s < count; ++s) {
    const int64_t first = batch * s / count;
    shares.push_back({first, batch * (s + 1) / count - first});
  }
  return shares;
}

// The batch cut into chunks of `size` samples (the last may be smaller), whatever the thread
// count: for sums over the batch that must not depend on it.
std::vector<Piece> split_into_chunks(int64_t batch, int64_t size) {
  std::vector<Piece> chunks;
  for (int64_t first = 0; first < batch; first += size)
    chunks.push_back({first, std::min(size, batch - first)});
  return chunks;
}

// The plan of each share size (at most two), or nullopt if oneDNN refuses one.
using PlansBySize = std::vector<std::pair<int64_t, std::shared_ptr<const ConvPlan>>>;

std::optional<PlansBySize> plans_for(const std::vector<Piece>& shares, ConvKey key) {
  PlansBySize plans;
  for (const Piece& share : shares) {
    const bool known = std::any_of(plans.begin(), plans.end(),
                                   [&](const auto& entry) { return entry.first == share.size; });
    if (known) continue;
    key.batch = share.size;
    plans.emplace_back(share.size, plan_for(key));
    if (!plans.back().second) return std::nullopt;
  }
  return plans;
}

const ConvPlan& plan_of(const PlansBySize& plans, int64_t size) {
  for (const auto& [plan_size, plan] : plans)
    if (plan_size == size) return *plan;
  MINIDL_INTERNAL_ASSERT(false, "conv2d (oneDNN): no plan for shares of ", size, " samples");
  return *plans.front().second;
}

constexpr size_t kAlignment = 64;
size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// One byte buffer per share, large enough for any of `plans`: a buffer for each operand that
// needs a reorder, and the scratchpad.
class Workspace {
 public:
  Workspace(int64_t shares, const PlansBySize& plans) {
    for (const auto& entry : plans) {
      const ConvPlan& plan = *entry.second;
      size_t bytes = aligned(plan.scratchpad_bytes);
      for (const Operand& operand : plan.operands) bytes += aligned(operand.buffer_bytes());
      per_share_ = std::max(per_share_, bytes);
    }
    // One more alignment's worth, so that the first share can start on a kAlignment boundary.
    storage_ = empty({static_cast<int64_t>(per_share_ * shares + kAlignment)}, kUInt8);
  }
  char* share(int64_t s) const {
    const auto base = reinterpret_cast<uintptr_t>(storage_.data_ptr());
    return reinterpret_cast<char*>(aligned(base)) + static_cast<size_t>(s) * per_share_;
  }

 private:
  Tensor storage_;
  size_t per_share_ = 0;
};

// Hands out consecutive aligned pieces of one share's buffer.
class Carver {
 public:
  explicit Carver(char* base) : next_(base) {}
  char* take(size_t bytes) {
    char* piece = next_;
    next_ += aligned(bytes);
    return piece;
  }

 private:
  char* next_;
};

memory scratchpad(const ConvPlan& plan, Carver& carver) {
  return onednn::scratchpad_memory(carver.take(plan.scratchpad_bytes), plan.scratchpad_bytes);
}

// The memory the primitive reads for an input operand: the tensor's own, or the tensor reordered
// into a buffer.
memory input_memory(const Operand& operand, const void* data, Carver& carver) {
  const memory user = onednn::wrap(operand.user, data);
  if (!operand.reorder) return user;
  memory wanted(operand.wanted, onednn::engine(), carver.take(operand.buffer_bytes()));
  onednn::execute_reorder(*operand.reorder, user, wanted, "oneDNN reorder: activations");
  return wanted;
}

// The memory the primitive writes for an output operand: the tensor's own, or a buffer that
// write_back() reorders into it.
memory output_memory(const Operand& operand, void* data, Carver& carver) {
  if (!operand.reorder) return onednn::wrap(operand.user, data);
  return memory(operand.wanted, onednn::engine(), carver.take(operand.buffer_bytes()));
}

void write_back(const Operand& operand, const memory& written, void* data, const char* what) {
  if (operand.reorder)
    onednn::execute_reorder(*operand.reorder, written, onednn::wrap(operand.user, data), what);
}

// Runs fn(share index, share, carver of the share's own buffer in `workspace`) for every share
// on minidl's threads.
template <class Fn>
void for_each_share(const std::vector<Piece>& shares, const Workspace& workspace, const Fn& fn) {
  parallel_for(0, static_cast<int64_t>(shares.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      Carver carver(workspace.share(s));
      fn(s, shares[s], carver);
    }
  });
}

// Reorders a whole operand (the weights) into the layout the primitive wants, once per call
// rather than once per share.
Tensor prepared_weights(const Operand& operand, const Tensor& weight) {
  if (!operand.reorder) return weight;
  Tensor prepared = empty({static_cast<int64_t>(operand.wanted.get_size())}, kUInt8);
  onednn::execute_reorder(*operand.reorder, onednn::wrap(operand.user, weight.data_ptr()),
                          onednn::wrap(operand.wanted, prepared.data_ptr()),
                          "oneDNN reorder: weights");
  return prepared;
}

MemoryFormat format_of(const Tensor& t) {
  return t.suggest_memory_format() == MemoryFormat::ChannelsLast ? MemoryFormat::ChannelsLast
                                                                 : MemoryFormat::Contiguous;
}

// `t` as `dtype`, laid out in `format` (itself when it already is).
Tensor converted(const Tensor& t, DType dtype, MemoryFormat format) {
  if (t.dtype() == dtype && t.is_contiguous(format)) return t;
  return empty(t.sizes(), dtype, format).copy_(t);
}

void* sample_pointer(const Tensor& t, int64_t sample) {
  return static_cast<char*>(t.data_ptr()) +
         static_cast<size_t>(sample * t.size(1) * t.size(2) * t.size(3)) * t.element_size();
}

// ---- the convolution ----

memory::data_type onednn_type(DType dtype) {
  return dtype == kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// The dtype oneDNN computes a convolution of `dtype` in: float32 as it is; bfloat16 as it is on
// CPUs with AVX-512 (oneDNN's bfloat16 kernels), else converted to float32 like float16; none for
// float64, which oneDNN does not have.
std::optional<DType> compute_dtype(DType dtype) {
  if (dtype == kFloat64) return std::nullopt;
  if (dtype == kBFloat16 && dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core)
    return kBFloat16;
  return kFloat32;
}

// The key of a convolution; plans_for() sets its share size.
ConvKey key_for(Direction direction, const Tensor& input, const Tensor& weight,
                const Conv2dParams& p, DType dtype, bool bias) {
  return {direction,
          0,
          input.size(1),
          input.size(2),
          input.size(3),
          weight.size(0),
          weight.size(2),
          weight.size(3),
          p.stride.h,
          p.stride.w,
          p.padding.h,
          p.padding.w,
          p.dilation.h,
          p.dilation.w,
          p.groups,
          onednn_type(dtype),
          input.suggest_memory_format() == MemoryFormat::ChannelsLast,
          bias};
}

// Whether the input's gradient goes to oneDNN. Its kernels work on blocks of 8 channels, so for
// an input of 1 channel (LeNet's conv1) the gradient is mostly padding: 20.5-23.2 ms against
// 12.1-13.6 ms for im2col (bench_conv, LeNet conv1 backward, 2026-11-24). With 6 input channels
// (LeNet's conv2) oneDNN was still faster (11.6 against 12.5-14.1 ms), as was every forward pass.
bool takes_input_grad(const Tensor& input, const Conv2dParams& params) {
  constexpr int64_t kMinInputChannelsPerGroup = 4;
  return onednn_enabled() && input.size(1) / params.groups >= kMinInputChannelsPerGroup;
}

}  // namespace

std::optional<Tensor> onednn_conv2d_forward(const Tensor& input, const Tensor& weight,
                                            const Tensor& bias, const Conv2dParams& params) {
  if (!onednn_enabled()) return std::nullopt;
  const std::optional<DType> dtype = compute_dtype(input.dtype());
  if (!dtype) return std::nullopt;
  const auto shares = split_batch(input.size(0));
  const auto plans =
      plans_for(shares, key_for(Direction::Forward, input, weight, params, *dtype, bias.defined()));
  if (!plans) return std::nullopt;
  const ProfileScope profile("conv2d forward (oneDNN)", {input, weight, bias});

  const MemoryFormat format = format_of(input);
  const Tensor input_ready = converted(input, *dtype, format);
  const Tensor weight_ready = prepared_weights(plans->front().second->operands[1],
                                               converted(weight, *dtype, MemoryFormat::Contiguous));
  const Tensor bias_ready =
      bias.defined() ? converted(bias, kFloat32, MemoryFormat::Contiguous) : Tensor();
  const memory::desc bias_desc({weight.size(0)}, memory::data_type::f32, memory::format_tag::x);
  Tensor output = empty(conv2d_output_sizes(input.sizes(), weight.sizes(), params), *dtype, format);
  const Workspace workspace(static_cast<int64_t>(shares.size()), *plans);
  for_each_share(shares, workspace, [&](int64_t, const Piece& share, Carver& carver) {
    const ConvPlan& plan = plan_of(*plans, share.size);
    const Operand &src = plan.operands[0], &weights = plan.operands[1], &dst = plan.operands[2];
    void* output_share = sample_pointer(output, share.first);
    const memory written = output_memory(dst, output_share, carver);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, input_memory(src, sample_pointer(input_ready, share.first), carver)},
        {DNNL_ARG_WEIGHTS, onednn::wrap(weights.wanted, weight_ready.data_ptr())},
        {DNNL_ARG_DST, written},
        {DNNL_ARG_SCRATCHPAD, scratchpad(plan, carver)}};
    if (bias_ready.defined())
      args.emplace(DNNL_ARG_BIAS, onednn::wrap(bias_desc, bias_ready.data_ptr()));
    onednn::execute(plan.primitive, args);
    write_back(dst, written, output_share, "oneDNN reorder: activations");
  });
  return converted(output, input.dtype(), format);
}

std::optional<Tensor> onednn_conv2d_input_grad(const Tensor& grad_output, const Tensor& input,
                                               const Tensor& weight, const Conv2dParams& params) {
  if (!takes_input_grad(input, params)) return std::nullopt;
  const std::optional<DType> dtype = compute_dtype(grad_output.dtype());
  if (!dtype) return std::nullopt;
  const auto shares = split_batch(input.size(0));
  const auto plans =
      plans_for(shares, key_for(Direction::BackwardData, input, weight, params, *dtype, false));
  if (!plans) return std::nullopt;
  const ProfileScope profile("conv2d input grad (oneDNN)", {grad_output, input, weight});
  const MemoryFormat format = format_of(input);
  const Tensor weight_ready = prepared_weights(plans->front().second->operands[1],
                                               converted(weight, *dtype, MemoryFormat::Contiguous));
  const Tensor grad_output_ready = converted(grad_output, *dtype, format);
  Tensor grad_input = empty(input.sizes(), *dtype, format);
  const Workspace workspace(static_cast<int64_t>(shares.size()), *plans);
  for_each_share(shares, workspace, [&](int64_t, const Piece& share, Carver& carver) {
    const ConvPlan& plan = plan_of(*plans, share.size);
    const Operand &diff_dst = plan.operands[0], &weights = plan.operands[1],
                  &diff_src = plan.operands[2];
    void* grad_input_share = sample_pointer(grad_input, share.first);
    const memory written = output_memory(diff_src, grad_input_share, carver);
    onednn::execute(
        plan.primitive,
        {{DNNL_ARG_DIFF_DST,
          input_memory(diff_dst, sample_pointer(grad_output_ready, share.first), carver)},
         {DNNL_ARG_WEIGHTS, onednn::wrap(weights.wanted, weight_ready.data_ptr())},
         {DNNL_ARG_DIFF_SRC, written},
         {DNNL_ARG_SCRATCHPAD, scratchpad(plan, carver)}});
    write_back(diff_src, written, grad_input_share, "oneDNN reorder: activations");
  });
  return converted(grad_input, input.dtype(), format);
}

// Samples per chunk of the weight's gradient: enough work per primitive call (ResNet-20's first
// stage: 75 MFLOP), and a chunk for each of 8 threads in a batch of 128. (8 and 32 were within
// the noise of 16 in a bfloat16 ResNet-20 step, 2026-11-26.)
constexpr int64_t kWeightGradChunkSamples = 16;

std::optional<OnednnConvWeightGrads> onednn_conv2d_weight_grad(const Tensor& grad_output,
                                                               const Tensor& input,
                                                               const Tensor& weight,
                                                               const Conv2dParams& params,
                                                               bool bias) {
  // bfloat16 instructions, not the emulation oneDNN has for other AVX-512 CPUs, which nothing
  // here has measured against im2col.
  if (!onednn_enabled() || grad_output.dtype() != kBFloat16 || !onednn_bfloat16_instructions())
    return std::nullopt;
  const auto chunks = split_into_chunks(input.size(0), kWeightGradChunkSamples);
  const auto plans = plans_for(
      chunks, key_for(Direction::BackwardWeights, input, weight, params, kBFloat16, bias));
  if (!plans) return std::nullopt;
  const ProfileScope profile("conv2d weight grad (oneDNN)", {grad_output, input, weight});
  const MemoryFormat format = format_of(input);
  const Tensor input_ready = converted(input, kBFloat16, format);
  const Tensor grad_output_ready = converted(grad_output, kBFloat16, format);
  const int64_t weight_elements = weight.numel(), out_channels = weight.size(0);
  // Each chunk's sums, in float32: its weight gradient, then its bias gradient.
  const int64_t sum_elements = weight_elements + (bias ? out_channels : 0);
  const Tensor sums = empty({static_cast<int64_t>(chunks.size()), sum_elements}, kFloat32);
  float* const sums_data = sums.data_ptr<float>();
  const memory::desc bias_desc({out_channels}, memory::data_type::f32, memory::format_tag::x);
  // Each thread takes a run of consecutive chunks and one buffer for them.
  const auto runs = split_batch(static_cast<int64_t>(chunks.size()));
  const Workspace workspace(static_cast<int64_t>(runs.size()), *plans);
  for_each_share(runs, workspace, [&](int64_t r, const Piece& run, Carver&) {
    for (int64_t c = run.first; c < run.first + run.size; ++c) {
      const Piece& chunk = chunks[c];
      const ConvPlan& plan = plan_of(*plans, chunk.size);
      Carver carver(workspace.share(r));
      const Operand &src = plan.operands[0], &diff_dst = plan.operands[1],
                    &diff_weights = plan.operands[2];
      float* sum = sums_data + c * sum_elements;
      const memory written = output_memory(diff_weights, sum, carver);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, input_memory(src, sample_pointer(input_ready, chunk.first), carver)},
          {DNNL_ARG_DIFF_DST,
           input_memory(diff_dst, sample_pointer(grad_output_ready, chunk.first), carver)},
          {DNNL_ARG_DIFF_WEIGHTS, written},
          {DNNL_ARG_SCRATCHPAD, scratchpad(plan, carver)}};
      if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, onednn::wrap(bias_desc, sum + weight_elements));
      onednn::execute(plan.primitive, args);
      write_back(diff_weights, written, sum, "oneDNN reorder: weight gradients");
    }
  });
  // The chunks' sums added in chunk order.
  Tensor total = empty({sum_elements}, kFloat32);
  float* const total_data = total.data_ptr<float>();
  const auto chunk_count = static_cast<int64_t>(chunks.size());
  parallel_for(0, sum_elements, 4096, [&](int64_t begin, int64_t end) {
    std::copy(sums_data + begin, sums_data + end, total_data + begin);
    for (int64_t c = 1; c < chunk_count; ++c) {  // a chunk at a time: contiguous, vectorised
      const float* sum = sums_data + c * sum_elements;
      for (int64_t i = begin; i < end; ++i) total_data[i] += sum[i];
    }
  });
  OnednnConvWeightGrads grads;
  grads.weight = total.narrow(0, 0, weight_elements)
                     .view(weight.sizes())
                     .to(weight.dtype())
                     .contiguous(weight.suggest_memory_format());
  if (bias) grads.bias = total.narrow(0, weight_elements, out_channels).to(grad_output.dtype());
  return grads;
}

}  // namespace minidl::cpu
