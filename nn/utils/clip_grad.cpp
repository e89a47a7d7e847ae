// Gradient clipping: the checks, the tables of each (device, dtype), and the calls of the
// kernels (nn/utils/clip_grad.h; the kernels' conventions in nn/utils/clip_grad_kernels.h).
#include "minidl/nn/utils/clip_grad.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/cuda/build.h"
#include "minidl/core/cuda/graph.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/error.h"
#include "minidl/nn/utils/clip_grad_kernels.h"
#include "minidl/ops/captured_device_table.h"
#include "minidl/ops/dense_layout.h"
#include "minidl/ops/multi_tensor_table.h"

namespace minidl::nn::utils {

namespace {

constexpr const char* kNormOp = "clip_grad_norm_";
constexpr const char* kValueOp = "clip_grad_value_";

GradNormType checked_norm_type(double norm_type) {
  // Negated, so NaN fails too.
  MINIDL_CHECK(norm_type > 0, kNormOp, ": expected norm_type > 0 (2, 1, any p > 0, or ",
               "infinity), got ", norm_type, "; the 0, negative and -inf orders PyTorch also ",
               "accepts are not supported");
  GradNormType type;
  type.p = norm_type;
  type.kind = norm_type == 2.0        ? GradNormType::kTwo
              : norm_type == 1.0      ? GradNormType::kOne
              : std::isinf(norm_type) ? GradNormType::kInfinity
                                      : GradNormType::kOther;
  return type;
}

// The gradients of `parameters` that exist, checked to be floating point.
std::vector<Tensor> gradients_of(const std::vector<Tensor>& parameters, const char* op) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < parameters.size(); ++i) {
    MINIDL_CHECK(parameters[i].defined(), op, ": parameter ", i, " is an undefined tensor; ",
                 "expected the parameters whose gradients to clip (e.g. model->parameters())");
    Tensor grad = parameters[i].grad();
    if (!grad.defined()) continue;
    MINIDL_CHECK(is_floating_point(grad.dtype()), op, ": expected floating-point gradients, ",
                 "but parameter ", i, " has a ", grad.dtype(), " gradient");
    grads.push_back(std::move(grad));
  }
  return grads;
}

// float64 gradients (CPU only) beside CUDA ones would need a float64 norm on a GPU.
void check_no_float64_beside_cuda(const std::vector<Tensor>& grads) {
  bool any_cuda = false, any_float64 = false;
  for (const Tensor& grad : grads) {
    any_cuda = any_cuda || grad.is_cuda();
    any_float64 = any_float64 || grad.dtype() == kFloat64;
  }
  MINIDL_CHECK(!(any_cuda && any_float64), kNormOp, ": expected CUDA gradients alone or beside ",
               "float32, float16 or bfloat16 CPU gradients, but got float64 (CPU) gradients ",
               "together with CUDA ones; their norm would be float64, which minidl has on the ",
               "CPU only. Clip them in two calls");
}

// The dtype PyTorch stacks the per-gradient norms in (torch.promote_types over the gradients).
DType promoted_dtype(const std::vector<Tensor>& grads) {
  bool half = false, bfloat = false, single = false, twice = false;
  for (const Tensor& grad : grads) {
    half = half || grad.dtype() == kFloat16;
    bfloat = bfloat || grad.dtype() == kBFloat16;
    single = single || grad.dtype() == kFloat32;
    twice = twice || grad.dtype() == kFloat64;
  }
  if (twice) return kFloat64;
  if (single || (half && bfloat)) return kFloat32;
  return half ? kFloat16 : kBFloat16;
}

DType coefficient_dtype(DType norm_dtype) { return norm_dtype == kFloat64 ? kFloat64 : kFloat32; }

// What the partials of a device's chunks are kept in (nn/utils/clip_grad_kernels.h).
DType partials_dtype(Device device) { return device.is_cpu() ? kFloat64 : kFloat32; }

Tensor scalar_on(DType dtype, Device device) {
  return empty({}, TensorOptions(dtype).device(device));
}

// The gradients of one device, as the kernels take them: dense and non-empty, each dtype's in a
// multi-tensor table. A gradient that is not dense is handed over as a dense copy, written back
// after an in-place change. The tables keep their device memory until the object dies, after
// the launches that read it are queued.
class DeviceTables {
 public:
  DeviceTables(Device device, const std::vector<Tensor>& grads) : device_(device) {
    for (const Tensor& grad : grads) {
      if (grad.device() != device || grad.numel() == 0) continue;
      Tensor dense = grad;
      if (!is_non_overlapping_and_dense(grad)) {
        dense = grad.contiguous();
        copies_.emplace_back(grad, dense);
      }
      TensorListEntry entry;
      entry.data[0] = dense.data_ptr();
      entry.numel = dense.numel();
      by_dtype_[dense.dtype()].push_back(entry);
      keep_alive_.push_back(std::move(dense));
    }
  }

  // Lays out one table per dtype, each with `record` as its only group, and puts it where the
  // kernels read it: the image itself on the CPU; on CUDA, device memory uploaded on the current
  // stream, or, while a CUDA graph is being captured, a table of the graph's own that a replay
  // hook uploads (Note [What a captured step may do] in core/cuda/graph.h).
  template <class Group>
  void build(const Group& record) {
    tables_.clear();
    args_.clear();
    for (const auto& [dtype, entries] : by_dtype_) {
      auto table = std::make_unique<MultiTensorTable>();
      table->build(std::vector<Group>{record}, entries);
      MultiTensorArgs args;
      args.table = device_memory(*table);
      args.layout = table->layout();
      args.dtype = dtype;
      args.device_index = device_.is_cuda() ? device_.index : -1;
      tables_.push_back(std::move(table));
      args_.push_back(args);
    }
  }

  Device device() const { return device_; }
  const std::vector<MultiTensorArgs>& args() const { return args_; }
  int64_t num_chunks() const {
    int64_t chunks = 0;
    for (const MultiTensorArgs& args : args_) chunks += args.layout.num_chunks;
    return chunks;
  }
  void write_back() {
    for (auto& [grad, copy] : copies_) grad.copy_(copy);
  }

 private:
  const std::byte* device_memory(MultiTensorTable& table) {
    if (!device_.is_cuda()) return table.image().data();
    if constexpr (cuda::kBuilt) {
      if (cuda::CudaGraph* graph = cuda::capturing_graph(cuda::current_stream(device_.index))) {
        // The gradients' addresses are the graph's for good: one upload, before the first replay.
        auto captured = std::make_shared<CapturedDeviceTable>(table.image(), device_);
        graph->add_replay_hook([captured] { captured->upload_changes(); });
        return static_cast<const std::byte*>(captured->device_data());
      }
      return static_cast<const std::byte*>(table.device_table(device_));
    }
    MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
    return nullptr;
  }

  Device device_;
  std::map<DType, std::vector<TensorListEntry>> by_dtype_;
  std::vector<Tensor> keep_alive_;                 // the dense gradients the entries point to
  std::vector<std::pair<Tensor, Tensor>> copies_;  // (gradient, its dense copy)
  std::vector<std::unique_ptr<MultiTensorTable>> tables_;
  std::vector<MultiTensorArgs> args_;
};

// The devices of `grads`, in the order they first appear.
std::vector<Device> devices_of(const std::vector<Tensor>& grads) {
  std::vector<Device> devices;
  for (const Tensor& grad : grads) {
    bool seen = false;
    for (const Device& device : devices) seen = seen || device == grad.device();
    if (!seen) devices.push_back(grad.device());
  }
  return devices;
}

// One device's part of clip_grad_norm_: its tables (their group record pointing at `clip_coef`,
// which the scaling reads) and its norm, reduced and finished on the device.
struct DeviceNorm {
  DeviceNorm(Device device, const std::vector<Tensor>& grads, GradNormType norm_type,
             double max_norm, DType norm_dtype)
      : tables(device, grads),
        total_norm(scalar_on(norm_dtype, device)),
        clip_coef(scalar_on(coefficient_dtype(norm_dtype), device)) {
    ClipNormGroup record;
    record.norm_type = norm_type;
    record.coefficient = clip_coef.data_ptr();
    record.coefficient_is_double = clip_coef.dtype() == kFloat64 ? 1 : 0;
    tables.build(record);
    const ClipGradKernels& kernels = kernels_for<ClipGradKernels>(device);
    const Tensor partials =
        empty({tables.num_chunks()}, TensorOptions(partials_dtype(device)).device(device));
    NormFinishArgs finish;
    finish.norm_type = norm_type;
    finish.max_norm = max_norm;
    finish.device_index = device.is_cuda() ? device.index : -1;
    int64_t offset = 0;
    for (const MultiTensorArgs& args : tables.args()) {
      kernels.reduce_chunks(args, partials.narrow(0, offset, args.layout.num_chunks));
      finish.tables[finish.num_tables++] = {args.table, args.layout, args.dtype, offset};
      offset += args.layout.num_chunks;
    }
    kernels.finish_norm(finish, partials, total_norm, clip_coef);
  }

  void scale() {
    for (const MultiTensorArgs& args : tables.args())
      kernels_for<ClipGradKernels>(tables.device()).scale(args);
    tables.write_back();
  }

  DeviceTables tables;
  Tensor total_norm;  // of this device's gradients
  Tensor clip_coef;   // what its gradients are multiplied by
};

void bump_versions(const std::vector<Tensor>& grads) {
  for (const Tensor& grad : grads) grad.bump_version();
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  const GradNormType type = checked_norm_type(norm_type);
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = gradients_of(parameters, kNormOp);
  if (grads.empty()) return scalar_tensor(0.0, TensorOptions(kFloat32));
  check_no_float64_beside_cuda(grads);
  const DType norm_dtype = promoted_dtype(grads);

  std::vector<std::unique_ptr<DeviceNorm>> devices;
  for (const Device& device : devices_of(grads))
    devices.push_back(std::make_unique<DeviceNorm>(device, grads, type, max_norm, norm_dtype));
  Tensor total_norm = devices.front()->total_norm;
  if (devices.size() > 1) {
    // As PyTorch stacks every norm on the first device: the norm of the devices' norms (equal to
    // the norm of all per-gradient norms, within the rounding of each device's), and its
    // coefficient copied over each device's own.
    const Device first = devices.front()->tables.device();
    Tensor device_norms =
        empty({static_cast<int64_t>(devices.size())}, TensorOptions(norm_dtype).device(first));
    for (size_t d = 0; d < devices.size(); ++d)
      device_norms.narrow(0, static_cast<int64_t>(d), 1).copy_(devices[d]->total_norm.reshape({1}));
    const DeviceNorm combined(first, {device_norms}, type, max_norm, norm_dtype);
    total_norm = combined.total_norm;
    for (const auto& device : devices) device->clip_coef.copy_(combined.clip_coef);
  }

  if (error_if_nonfinite) {
    const double norm = total_norm.item<double>();
    MINIDL_CHECK(std::isfinite(norm), kNormOp, ": the total norm of order ", norm_type,
                 " of the gradients is ", norm,
                 ", so they cannot be clipped (expected a finite norm). Pass "
                 "error_if_nonfinite=false to scale them by the non-finite norm anyway");
  }
  for (const auto& device : devices) device->scale();
  bump_versions(grads);
  return total_norm;
}

Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = gradients_of(parameters, kValueOp);
  for (const Device& device : devices_of(grads)) {
    DeviceTables tables(device, grads);
    tables.build(ClipClampGroup{clip_value});
    for (const MultiTensorArgs& args : tables.args())
      kernels_for<ClipGradKernels>(device).clamp(args);
    tables.write_back();
  }
  bump_versions(grads);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace minidl::nn::utils
