// scaled_dot_product_attention on cuDNN's fused attention (ops/cuda/attention_cudnn.h), through
// the graph API of NVIDIA's cuDNN frontend (header-only, MIT; tools/fetch_cudnn_frontend.sh).
// Built only when CMake found the frontend's headers; else ops/cuda/attention_without_cudnn.cpp.
//
// One graph per (thread's cuDNN handle, pass, dtype, B, H, T, S, D, Dv, causal, scale): the
// first call of a shape validates it, lowers it to cuDNN's backend and builds the heuristics'
// first supported plan (milliseconds, outside any CUDA graph capture); later calls only execute
// it on the current stream with a workspace from the caching allocator. A graph cuDNN refuses is
// cached as refused, with cuDNN's reason, so that `fits` asks once.
//
// Tensors are the contiguous [B, H, T, D] ... of ops/attention_kernels.h; the softmax statistics
// (cuDNN's "Stats") are its [B, H, T, 1] float32 natural-log logsumexp, the layout of our
// logsumexp [B, H, T]. The backward asks for cuDNN's deterministic algorithm, since the
// kernel interface promises the same bits on every run.
#include "minidl/ops/cuda/attention_cudnn.h"

#include <cudnn_frontend.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "minidl/core/cuda/caching_allocator.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/error.h"
#include "minidl/ops/cuda/cudnn_handle.h"

namespace minidl::cuda {

namespace {

namespace fe = cudnn_frontend;

// The graphs' tensors, named by the uids the variant pack binds pointers to.
enum Uid : int64_t {
  kQuery = 1,
  kKey,
  kValue,
  kOut,
  kLogsumexp,
  kGradOut,
  kGradQuery,
  kGradKey,
  kGradValue,
};

constexpr uintptr_t kAlignmentBytes = 16;

// The [B, H, n, width] tensor, and logsumexp's [B, H, T, 1], in cuDNN's terms.
struct Shapes {
  Shape query, key, value, out, logsumexp;

  explicit Shapes(const AttentionParams& p)
      : query{p.batch, p.heads, p.query_length, p.head_dim},
        key{p.batch, p.heads, p.key_length, p.head_dim},
        value{p.batch, p.heads, p.key_length, p.value_dim},
        out{p.batch, p.heads, p.query_length, p.value_dim},
        logsumexp{p.batch, p.heads, p.query_length, 1} {}
};

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& graph, const char* name,
                                                    Uid uid, const Shape& dims) {
  return graph.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
          contiguous_strides(dims)));
}

void mark_output(const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, Uid uid,
                 const Shape& dims) {
  tensor->set_output(true).set_uid(uid).set_dim(dims).set_stride(contiguous_strides(dims));
}

float scale_of(const AttentionParams& params) { return static_cast<float>(params.scale); }

// The graph of one pass: O and Stats from Q, K, V; or dQ, dK, dV from Q, K, V, O, dO and Stats.
std::shared_ptr<fe::graph::Graph> make_graph(const AttentionParams& params, DType dtype,
                                             AttentionPass pass) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(dtype == kFloat16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const Shapes shapes(params);
  const auto query = input(*graph, "Q", kQuery, shapes.query);
  const auto key = input(*graph, "K", kKey, shapes.key);
  const auto value = input(*graph, "V", kValue, shapes.value);
  if (pass == AttentionPass::Forward) {
    auto attributes = fe::graph::SDPA_attributes()
                          .set_name("scaled_dot_product_attention")
                          .set_generate_stats(true)
                          .set_attn_scale(scale_of(params))
                          .set_causal_mask(params.is_causal);
    auto [out, logsumexp] = graph->sdpa(query, key, value, attributes);
    mark_output(out, kOut, shapes.out);
    mark_output(logsumexp, kLogsumexp, shapes.logsumexp);
    logsumexp->set_data_type(fe::DataType_t::FLOAT);
  } else {
    const auto out = input(*graph, "O", kOut, shapes.out);
    const auto grad_out = input(*graph, "dO", kGradOut, shapes.out);
    const auto logsumexp = input(*graph, "Stats", kLogsumexp, shapes.logsumexp);
    logsumexp->set_data_type(fe::DataType_t::FLOAT);
    auto attributes = fe::graph::SDPA_backward_attributes()
                          .set_name("scaled_dot_product_attention_backward")
                          .set_attn_scale(scale_of(params))
                          .set_causal_mask(params.is_causal)
                          .set_deterministic_algorithm(true);
    auto [grad_query, grad_key, grad_value] =
        graph->sdpa_backward(query, key, value, out, grad_out, logsumexp, attributes);
    mark_output(grad_query, kGradQuery, shapes.query);
    mark_output(grad_key, kGradKey, shapes.key);
    mark_output(grad_value, kGradValue, shapes.value);
  }
  return graph;
}

// A built graph, or why cuDNN refused it.
struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;  // null when refused
  int64_t workspace_bytes = 0;
  std::string refusal;
};

// Validates, lowers and builds the graph with the heuristics' plans; the first error ends it.
Plan build_plan(cudnnHandle_t handle, const AttentionParams& params, DType dtype,
                AttentionPass pass) {
  Plan plan;
  std::shared_ptr<fe::graph::Graph> graph = make_graph(params, dtype, pass);
  fe::error_t status = graph->validate();
  if (status.is_good()) status = graph->build_operation_graph(handle);
  if (status.is_good()) status = graph->create_execution_plans({fe::HeurMode_t::A});
  if (status.is_good()) status = graph->check_support();
  if (status.is_good()) status = graph->build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE);
  if (status.is_good()) status = graph->get_workspace_size(plan.workspace_bytes);
  if (status.is_bad()) {
    plan.refusal = status.get_message();
    if (plan.refusal.empty()) plan.refusal = "no reason given";
    return plan;
  }
  plan.graph = std::move(graph);
  return plan;
}

using PlanKey = std::tuple<cudnnHandle_t, AttentionPass, DType, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, bool, uint32_t>;

PlanKey plan_key(cudnnHandle_t handle, const AttentionParams& p, DType dtype, AttentionPass pass) {
  const float scale = scale_of(p);
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &scale, sizeof scale_bits);
  return {handle,       pass,       dtype,       p.batch,     p.heads,   p.query_length,
          p.key_length, p.head_dim, p.value_dim, p.is_causal, scale_bits};
}

// Every plan built, refused ones too. Handles are per thread and device (ops/cuda/cudnn_handle.h),
// so no graph is executed by two threads at once.
class PlanCache {
 public:
  // The plan for this pass of this problem on the calling thread's handle, built on first use.
  std::shared_ptr<const Plan> get(const AttentionParams& params, DType dtype, AttentionPass pass,
                                  int device) {
    cudnnHandle_t handle = cudnn_handle(device);
    const PlanKey key = plan_key(handle, params, dtype, pass);
    if (auto plan = find(key)) return plan;
    // Building loads cuDNN's kernels, which the driver refuses during a capture.
    check_not_capturing(device,
                        "scaled_dot_product_attention: building cuDNN's plan for a new shape",
                        "run the step once eagerly, with the same shapes, before capturing it");
    auto plan = std::make_shared<const Plan>(build_plan(handle, params, dtype, pass));
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.emplace(key, std::move(plan)).first->second;
  }

  // As get(), for the automatic choice: null where the plan is not built yet and building it is
  // not harmless (cudnn_attention_fits_automatically).
  std::shared_ptr<const Plan> get_if_harmless(const AttentionParams& params, DType dtype,
                                              AttentionPass pass, int device) {
    const PlanKey key = plan_key(cudnn_handle(device), params, dtype, pass);
    if (auto plan = find(key)) return plan;
    if (is_capturing(current_stream(device))) return nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (plans_.size() >= kAutomaticPlans) return nullptr;
    }
    return get(params, dtype, pass, device);
  }

 private:
  std::shared_ptr<const Plan> find(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : it->second;
  }

  std::mutex mutex_;
  std::map<PlanKey, std::shared_ptr<const Plan>> plans_;
};

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

// The conditions of cudnn_attention_fits that need no plan.
bool fits_without_plan(const AttentionParams& params,
                       std::initializer_list<const Tensor*> operands) {
  const DType dtype = operands.begin()[0]->dtype();
  if (dtype != kFloat16 && dtype != kBFloat16) return false;
  if (params.dropout_p != 0.0 || params.mask != AttentionMask::None) return false;
  if (params.head_dim <= 0 || params.head_dim % 8 != 0) return false;
  if (params.value_dim <= 0 || params.value_dim % 8 != 0) return false;
  if (params.query_length == 0 || params.key_length == 0 || params.batch * params.heads == 0)
    return false;
  for (const Tensor* operand : operands)
    if (reinterpret_cast<uintptr_t>(operand->data_ptr()) % kAlignmentBytes != 0) return false;
  return true;
}

// The plan for a call of an entry point, or an error saying why cuDNN does not take it.
std::shared_ptr<const Plan> plan_for_call(const AttentionParams& params,
                                          std::initializer_list<const Tensor*> operands,
                                          AttentionPass pass) {
  const Tensor& first = *operands.begin()[0];
  const char* pass_name = pass == AttentionPass::Forward ? "forward" : "backward";
  MINIDL_CHECK(fits_without_plan(params, operands), "scaled_dot_product_attention: cuDNN's ",
               pass_name,
               " expected float16 or bfloat16, dropout_p 0, no attn_mask, D and Dv multiples of "
               "8, T and S not 0 and 16-byte aligned tensors; got ",
               first.dtype(), ", dropout_p ", params.dropout_p,
               params.mask == AttentionMask::None ? ", no attn_mask" : ", an attn_mask",
               ", D = ", params.head_dim, ", Dv = ", params.value_dim,
               ", T = ", params.query_length, ", S = ", params.key_length);
  std::shared_ptr<const Plan> plan =
      plan_cache().get(params, first.dtype(), pass, first.device().index);
  MINIDL_CHECK(plan->graph != nullptr, "scaled_dot_product_attention: cuDNN has no ", pass_name,
               " plan for ", first.dtype(), " B = ", params.batch, ", H = ", params.heads,
               ", T = ", params.query_length, ", S = ", params.key_length,
               ", D = ", params.head_dim, ", Dv = ", params.value_dim,
               params.is_causal ? ", causal" : "", ": ", plan->refusal);
  return plan;
}

void execute(const Plan& plan, std::unordered_map<int64_t, void*> pointers, int device,
             AttentionPass pass) {
  const std::shared_ptr<void> workspace =
      plan.workspace_bytes > 0
          ? CachingAllocator::allocate_shared(static_cast<size_t>(plan.workspace_bytes), device)
          : nullptr;
  fe::error_t status = plan.graph->execute(cudnn_handle(device), pointers, workspace.get());
  MINIDL_CHECK(status.is_good(), "scaled_dot_product_attention: cuDNN's ",
               pass == AttentionPass::Forward ? "forward" : "backward",
               " failed to run: ", status.get_message());
}

}  // namespace

bool cudnn_attention_built() { return true; }

bool cudnn_attention_fits(const AttentionParams& params,
                          std::initializer_list<const Tensor*> operands, AttentionPass pass) {
  if (!fits_without_plan(params, operands)) return false;
  const Tensor& first = *operands.begin()[0];
  DeviceGuard device_guard(first.device().index);
  return plan_cache().get(params, first.dtype(), pass, first.device().index)->graph != nullptr;
}

bool cudnn_attention_fits_automatically(const AttentionParams& params,
                                        std::initializer_list<const Tensor*> operands,
                                        AttentionPass pass) {
  if (!fits_without_plan(params, operands)) return false;
  const Tensor& first = *operands.begin()[0];
  DeviceGuard device_guard(first.device().index);
  const auto plan = plan_cache().get_if_harmless(params, first.dtype(), pass, first.device().index);
  return plan != nullptr && plan->graph != nullptr;
}

void attention_forward_cudnn(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                             const Tensor& key, const Tensor& value, const Tensor& /*mask*/,
                             const AttentionParams& params) {
  const int device = query.device().index;
  DeviceGuard device_guard(device);  // the handle, plan and workspace of this device
  const std::shared_ptr<const Plan> plan =
      plan_for_call(params, {&query, &key, &value, &out, &logsumexp}, AttentionPass::Forward);
  execute(*plan,
          {{kQuery, query.data_ptr()},
           {kKey, key.data_ptr()},
           {kValue, value.data_ptr()},
           {kOut, out.data_ptr()},
           {kLogsumexp, logsumexp.data_ptr()}},
          device, AttentionPass::Forward);
}

void attention_backward_cudnn(const Tensor& grad_query, const Tensor& grad_key,
                              const Tensor& grad_value, const Tensor& grad_out, const Tensor& query,
                              const Tensor& key, const Tensor& value, const Tensor& out,
                              const Tensor& logsumexp, const Tensor& /*mask*/,
                              const AttentionParams& params) {
  const int device = query.device().index;
  DeviceGuard device_guard(device);
  const std::shared_ptr<const Plan> plan = plan_for_call(
      params,
      {&query, &key, &value, &out, &grad_out, &logsumexp, &grad_query, &grad_key, &grad_value},
      AttentionPass::Backward);
  execute(*plan,
          {{kQuery, query.data_ptr()},
           {kKey, key.data_ptr()},
           {kValue, value.data_ptr()},
           {kOut, out.data_ptr()},
           {kGradOut, grad_out.data_ptr()},
           {kLogsumexp, logsumexp.data_ptr()},
           {kGradQuery, grad_query.data_ptr()},
           {kGradKey, grad_key.data_ptr()},
           {kGradValue, grad_value.data_ptr()}},
          device, AttentionPass::Backward);
}

}  // namespace minidl::cuda
