// Batch norm's training step on cuDNN (see ops/cuda/batch_norm_cudnn.h). Host code only, so a
// .cpp compiled in every build; without CUDA it defines nothing.
//
// Each call builds its descriptors (host structs), asks cuDNN the sizes of its workspace and
// reserve space, takes both from the caching allocator and launches on the current stream: no
// host synchronisation, and capturable in a CUDA graph. The reserve space outlives the forward
// pass in CudnnBatchNormSaved, for the backward.
#include "minidl/core/cuda/build.h"

#if MINIDL_WITH_CUDA

#include <cudnn.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/device.h"
#include "minidl/core/logging.h"
#include "minidl/ops/cuda/batch_norm_cudnn.h"
#include "minidl/ops/cuda/cudnn_descriptors.h"
#include "minidl/ops/cuda/cudnn_handle.h"

namespace minidl::cuda {

namespace {

constexpr const char* kOp = "batch_norm on cuDNN";
constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

cudnnBatchNormOps_t to_cudnn(CudnnBatchNormOps ops) {
  switch (ops) {
    case CudnnBatchNormOps::Normalize: return CUDNN_BATCHNORM_OPS_BN;
    case CudnnBatchNormOps::NormalizeRelu: return CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    case CudnnBatchNormOps::NormalizeAddRelu: return CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  }
  return CUDNN_BATCHNORM_OPS_BN;
}

const char* ops_name(CudnnBatchNormOps ops) {
  switch (ops) {
    case CudnnBatchNormOps::Normalize: return "batch norm";
    case CudnnBatchNormOps::NormalizeRelu: return "batch norm + ReLU";
    case CudnnBatchNormOps::NormalizeAddRelu: return "batch norm + add + ReLU";
  }
  return "batch norm";
}

bool with_activation(CudnnBatchNormOps ops) { return ops != CudnnBatchNormOps::Normalize; }
bool with_addend(CudnnBatchNormOps ops) { return ops == CudnnBatchNormOps::NormalizeAddRelu; }

// ReLU that keeps NaN, as minidl's relu.
class ReluDescriptor {
 public:
  ReluDescriptor() {
    MINIDL_CUDNN_CHECK(cudnnCreateActivationDescriptor(&descriptor_));
    MINIDL_CUDNN_CHECK(
        cudnnSetActivationDescriptor(descriptor_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  }
  ~ReluDescriptor() { (void)cudnnDestroyActivationDescriptor(descriptor_); }
  ReluDescriptor(const ReluDescriptor&) = delete;
  ReluDescriptor& operator=(const ReluDescriptor&) = delete;
  cudnnActivationDescriptor_t get() const { return descriptor_; }

 private:
  cudnnActivationDescriptor_t descriptor_ = nullptr;
};

// cuDNN's word that it does not take an input (a dtype, a shape, a form), as against a failure.
// Since cuDNN 9 a status is a category (the thousands) and a detail: NOT_SUPPORTED_SHAPE (3002)
// is a NOT_SUPPORTED.
bool is_refusal(cudnnStatus_t status) {
#ifdef CUDNN_STATUS_CATEGORY
  const int category = CUDNN_STATUS_CATEGORY(static_cast<int>(status));
#else
  const int category = static_cast<int>(status);
#endif
  return category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_BAD_PARAM;
}

// The descriptors of one step: every [N, C, H, W] operand (x, y, z and their gradients) is
// alike; the per-channel ones are derived from it (float32 for every input dtype but double),
// and `derived` says whether cuDNN could.
struct StepDescriptors {
  explicit StepDescriptors(const Tensor& x)
      : data(x.sizes(), x.dtype(), MemoryFormat::ChannelsLast),
        derived(cudnnDeriveBNTensorDescriptor(per_channel.get(), data.get(), kMode)) {}
  cudnnActivationDescriptor_t activation(CudnnBatchNormOps ops) const {
    return with_activation(ops) ? relu.get() : nullptr;
  }
  cudnnTensorDescriptor_t addend(CudnnBatchNormOps ops) const {
    return with_addend(ops) ? data.get() : nullptr;
  }
  TensorDescriptor data;
  TensorDescriptor per_channel;
  ReluDescriptor relu;
  cudnnStatus_t derived;
};

// `bytes` from the caching allocator, on the current stream; at least one byte, so its pointer is
// never null: cuDNN's Ex calls given a null workspace run as the plain (non-Ex) calls, which
// ignore bnOps, and the fused ReLU would silently not happen.
Tensor scratch(size_t bytes, Device device) {
  return empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))},
               TensorOptions(kUInt8).device(device));
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

std::string describe(const Tensor& x, CudnnBatchNormOps ops) {
  return minidl::detail::concat(ops_name(ops), " of a ", x.dtype(),
                                " channels-last input of shape ", x.sizes());
}

// The forms cuDNN refused, by (dtype, shape, ops): not asked again, and said once. (By shape,
// since a refusal may depend on it: PyTorch gives cuDNN no batch of more than 880801 rows.)
class RefusedForms {
 public:
  bool refused(const Tensor& x, CudnnBatchNormOps ops) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return refused_.count(key(x, ops)) > 0;
  }
  void refuse(const Tensor& x, CudnnBatchNormOps ops, cudnnStatus_t status) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!refused_.insert(key(x, ops)).second) return;
    if (ops == CudnnBatchNormOps::Normalize)
      logger().info("{}: cuDNN refused the {} ({}); minidl's kernels run it", kOp, describe(x, ops),
                    cudnnGetErrorString(status));
    else
      logger().info(
          "{}: cuDNN refused the fused {} ({}); its plain batch norm runs, and the sum "
          "and the ReLU beside it",
          kOp, describe(x, ops), cudnnGetErrorString(status));
  }

 private:
  using Key = std::tuple<DType, Shape, CudnnBatchNormOps>;
  static Key key(const Tensor& x, CudnnBatchNormOps ops) { return {x.dtype(), x.sizes(), ops}; }
  std::mutex mutex_;
  std::set<Key> refused_;
};

RefusedForms& refused_forms() {
  static RefusedForms forms;
  return forms;
}

// cuDNN documents its BN+ReLU and BN+add+ReLU for half-precision NHWC inputs whose channels are a
// multiple of 4 (cudnnBatchNormalizationForwardTrainingEx); other inputs are not asked.
bool fusion_documented(const Tensor& x) { return x.dtype() == kFloat16 && x.size(1) % 4 == 0; }

struct ForwardArguments {
  const Tensor& x;
  const Tensor& weight;
  const Tensor& bias;
  const Tensor& running_mean;
  const Tensor& running_var;
  double momentum, eps;
  const Tensor& residual;  // defined for NormalizeAddRelu
};

// The forward pass with `ops` into `result`, or the status cuDNN refused it with.
cudnnStatus_t forward_with(CudnnBatchNormOps ops, const StepDescriptors& d,
                           const ForwardArguments& a, CudnnBatchNormForward& result) {
  const cudnnHandle_t handle = cudnn_handle(a.x.device().index);
  size_t workspace_bytes = 0, reserve_bytes = 0;
  cudnnStatus_t status = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
      handle, kMode, to_cudnn(ops), d.data.get(), d.addend(ops), d.data.get(), d.per_channel.get(),
      d.activation(ops), &workspace_bytes);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  status = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
      handle, kMode, to_cudnn(ops), d.activation(ops), d.data.get(), &reserve_bytes);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  const Tensor workspace = scratch(workspace_bytes, a.x.device());
  CudnnBatchNormSaved saved;
  saved.reserve = scratch(reserve_bytes, a.x.device());
  saved.reserve_bytes = reserve_bytes;
  const TensorOptions per_channel = TensorOptions(kFloat32).device(a.x.device());
  saved.mean = empty({a.x.size(1)}, per_channel);
  saved.invstd = empty({a.x.size(1)}, per_channel);
  saved.ops = ops;
  const ScalingFactor one(1, kFloat32), zero(0, kFloat32);
  status = cudnnBatchNormalizationForwardTrainingEx(
      handle, kMode, to_cudnn(ops), one.get(), zero.get(), d.data.get(), a.x.data_ptr(),
      d.addend(ops), with_addend(ops) ? a.residual.data_ptr() : nullptr, d.data.get(),
      result.out.data_ptr(), d.per_channel.get(), a.weight.data_ptr(), a.bias.data_ptr(),
      a.momentum, a.running_mean.data_ptr(), a.running_var.data_ptr(), a.eps, saved.mean.data_ptr(),
      saved.invstd.data_ptr(), d.activation(ops), workspace.data_ptr(), workspace_bytes,
      saved.reserve.data_ptr(), reserve_bytes);
  if (status == CUDNN_STATUS_SUCCESS) result.saved = std::move(saved);
  return status;
}

// The plain form's refusal: minidl's kernels run the input; any other failure is an error.
std::nullopt_t refuse_plain_form(const Tensor& x, cudnnStatus_t status) {
  MINIDL_CHECK(is_refusal(status), kOp, ": cuDNN failed the ",
               describe(x, CudnnBatchNormOps::Normalize), " (", cudnnGetErrorString(status),
               "); unset MINIDL_CUDA_BATCH_NORM to use minidl's kernels");
  refused_forms().refuse(x, CudnnBatchNormOps::Normalize, status);
  return std::nullopt;
}

}  // namespace

bool cudnn_batch_norm_fits(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (!x.is_cuda() || x.dim() != 4) return false;
  const auto per_channel_fits = [&](const Tensor& t) {
    return t.defined() && t.device() == x.device() && t.dtype() == kFloat32 && t.dim() == 1 &&
           t.size(0) == x.size(1) && t.is_contiguous();
  };
  return (x.dtype() == kFloat16 || x.dtype() == kBFloat16 || x.dtype() == kFloat32) &&
         x.is_contiguous(MemoryFormat::ChannelsLast) && x.numel() > 0 && x.numel() <= INT_MAX &&
         per_channel_fits(weight) && per_channel_fits(bias);
}

std::optional<CudnnBatchNormForward> cudnn_batch_norm_forward(
    const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
    const Tensor& running_var, double momentum, double eps, const Tensor& residual, bool relu) {
  MINIDL_INTERNAL_ASSERT(cudnn_batch_norm_fits(x, weight, bias), kOp, ": called for an input ",
                         "it does not take");
  const DeviceGuard device_guard(x.device().index);
  const Tensor input = cudnn_ready(x, MemoryFormat::ChannelsLast);
  const Tensor addend =
      relu && residual.defined() ? cudnn_ready(residual, MemoryFormat::ChannelsLast) : Tensor();
  const StepDescriptors d(input);
  if (d.derived != CUDNN_STATUS_SUCCESS) return refuse_plain_form(x, d.derived);
  const ForwardArguments arguments{input,       weight,   bias, running_mean,
                                   running_var, momentum, eps,  addend};
  CudnnBatchNormForward result;
  result.out = empty(x.sizes(), x.options(), MemoryFormat::ChannelsLast);
  const CudnnBatchNormOps fused = !relu                ? CudnnBatchNormOps::Normalize
                                  : residual.defined() ? CudnnBatchNormOps::NormalizeAddRelu
                                                       : CudnnBatchNormOps::NormalizeRelu;
  if (fused != CudnnBatchNormOps::Normalize && fusion_documented(x) &&
      !refused_forms().refused(x, fused)) {
    // Any failure of a fused form falls back to the plain one: that is the form that must work.
    const cudnnStatus_t status = forward_with(fused, d, arguments, result);
    if (status == CUDNN_STATUS_SUCCESS) return result;
    refused_forms().refuse(x, fused, status);
  }
  if (refused_forms().refused(x, CudnnBatchNormOps::Normalize)) return std::nullopt;
  const cudnnStatus_t status = forward_with(CudnnBatchNormOps::Normalize, d, arguments, result);
  if (status == CUDNN_STATUS_SUCCESS) return result;
  return refuse_plain_form(x, status);
}

CudnnBatchNormGradients cudnn_batch_norm_backward(const Tensor& grad_output, const Tensor& x,
                                                  const Tensor& out, const Tensor& weight,
                                                  const Tensor& bias,
                                                  const CudnnBatchNormSaved& saved, double eps) {
  const DeviceGuard device_guard(x.device().index);
  const CudnnBatchNormOps ops = saved.ops;
  const Tensor input = cudnn_ready(x, MemoryFormat::ChannelsLast);
  const Tensor dy = cudnn_ready(grad_output, MemoryFormat::ChannelsLast);
  const Tensor y = with_activation(ops) ? cudnn_ready(out, MemoryFormat::ChannelsLast) : Tensor();
  const StepDescriptors d(input);
  MINIDL_CUDNN_CHECK(d.derived);  // the forward pass derived the same
  const cudnnHandle_t handle = cudnn_handle(x.device().index);
  size_t workspace_bytes = 0;
  // y's descriptor is given to the size query in every form, as PyTorch does (only the call
  // itself is documented to take a null y without an activation).
  MINIDL_CUDNN_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
      handle, kMode, to_cudnn(ops), d.data.get(), d.data.get(), d.data.get(), d.addend(ops),
      d.data.get(), d.per_channel.get(), d.activation(ops), &workspace_bytes));
  const Tensor workspace = scratch(workspace_bytes, x.device());
  CudnnBatchNormGradients grads;
  grads.input = empty(x.sizes(), x.options(), MemoryFormat::ChannelsLast);
  if (with_addend(ops)) grads.residual = empty(x.sizes(), x.options(), MemoryFormat::ChannelsLast);
  const TensorOptions per_channel = TensorOptions(kFloat32).device(x.device());
  grads.weight = empty({x.size(1)}, per_channel);
  grads.bias = empty({x.size(1)}, per_channel);
  const ScalingFactor one(1, kFloat32), zero(0, kFloat32);
  MINIDL_CUDNN_CHECK(cudnnBatchNormalizationBackwardEx(
      handle, kMode, to_cudnn(ops), one.get(), zero.get(), one.get(), zero.get(), d.data.get(),
      input.data_ptr(), with_activation(ops) ? d.data.get() : nullptr, data_or_null(y),
      d.data.get(), dy.data_ptr(), d.addend(ops), data_or_null(grads.residual), d.data.get(),
      grads.input.data_ptr(), d.per_channel.get(), weight.data_ptr(),
      with_activation(ops) ? bias.data_ptr() : nullptr, grads.weight.data_ptr(),
      grads.bias.data_ptr(), eps, saved.mean.data_ptr(), saved.invstd.data_ptr(), d.activation(ops),
      workspace.data_ptr(), workspace_bytes, saved.reserve.data_ptr(), saved.reserve_bytes));
  return grads;
}

}  // namespace minidl::cuda

#endif  // MINIDL_WITH_CUDA
