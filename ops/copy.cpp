// Copies, conversions and fills: Tensor::copy_, to, clone, contiguous, fill_, zero_. Within one
// device through the kernels of ops/copy_kernels.h; between the host and a device, or between
// devices, staged here around the CUDA transfers of ops/cuda/transfer.h.
#include "minidl/core/autograd/function.h"
#include "minidl/core/cuda/build.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/copy_kernels.h"
#include "minidl/ops/cuda/transfer.h"
#include "minidl/ops/dense_layout.h"

namespace minidl {

namespace {

// A dense tensor's elements in storage order, as a contiguous 1-d view.
Tensor storage_order_view(const Tensor& t) {
  return make_view(t, {t.numel()}, {1}, t.storage_offset());
}

// Copies `src` (already broadcast to dst's shape) into `dst` across dtypes and devices.
void copy_data(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.device() == src.device()) return kernels_for<CopyKernels>(dst.device()).copy(dst, src);
  // A transfer: only CUDA builds have a second device.
  if constexpr (cuda::kBuilt) {
    // Two dense tensors of one dtype and the same strides hold their elements in the same order
    // in storage: the bytes move as they are (a channels-last tensor's to()).
    if (dst.dtype() == src.dtype() && dst.strides() == src.strides() &&
        is_non_overlapping_and_dense(dst) && is_non_overlapping_and_dense(src) &&
        !(dst.is_contiguous() && src.is_contiguous()))
      return copy_data(storage_order_view(dst), storage_order_view(src));
    const CopyKernels& host = CopyKernels::kCpu;
    const CopyKernels& device = CopyKernels::kCuda;
    if (dst.is_cuda() && src.is_cuda()) {
      // Across GPUs: make a contiguous source of dst's dtype, copy it over, then lay it out.
      Tensor staged = src.to(dst.dtype()).contiguous();
      Tensor landing = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.options());
      cuda::copy_peer(landing, staged);
      if (!landing.is_same(dst)) device.copy(dst, landing);
      return;
    }
    // Host <-> device: convert and lay out on the host side, move contiguous bytes.
    if (src.is_cpu()) {
      // A contiguous source of dst's dtype (a pinned batch) goes to the device as it is, so a
      // copy from pinned memory stays asynchronous.
      const bool direct = src.dtype() == dst.dtype() && src.is_contiguous();
      Tensor staged = direct ? src : empty(dst.sizes(), dst.dtype());
      if (!direct) host.copy(staged, src);
      Tensor landing = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.options());
      cuda::copy_host_device(landing, staged);
      if (!landing.is_same(dst)) device.copy(dst, landing);
    } else {
      Tensor staged = src.is_contiguous() && src.sizes() == dst.sizes()
                          ? src
                          : empty(dst.sizes(), src.options());
      if (!staged.is_same(src)) device.copy(staged, src);
      Tensor landing = empty(dst.sizes(), src.dtype());
      cuda::copy_host_device(landing, staged);
      host.copy(dst, landing);
    }
    return;
  }
  MINIDL_INTERNAL_ASSERT(false, "a CUDA tensor exists in a build without CUDA");
}

Tensor expand_to(const Tensor& src, const Shape& sizes) {
  broadcast_shapes(sizes, src.sizes(), "copy_");  // checks compatibility
  MINIDL_CHECK(static_cast<size_t>(src.dim()) <= sizes.size(), "copy_: source of shape ",
               src.sizes(), " cannot be broadcast to destination of shape ", sizes);
  return make_view(src, sizes, broadcast_strides(src, sizes), src.storage_offset());
}

// A copy of `self` laid out in `format`, recorded as op `op`; its gradient passes straight
// through.
Tensor copy_in_layout(const Tensor& self, MemoryFormat format, const char* op,
                      const char* node_name) {
  const ProfileScope profile(op, {self});
  Tensor out = empty(self.sizes(), self.options(), format);
  {
    NoGradGuard no_grad;
    copy_data(out, self);
  }
  autograd::record(
      out, node_name, {self}, [](const Tensor& grad) { return std::vector<Tensor>{grad}; },
      autograd::DoubleBackward::kSupported);
  return out;
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  const ProfileScope profile("copy_", {*this, src});
  check_defined(*this, "copy_", "self");
  check_defined(src, "copy_", "src");
  autograd::check_inplace(*this, "copy_");
  Tensor source = src.sizes() == sizes() ? src : expand_to(src, sizes());
  copy_data(*this, source);
  bump_version();
  return *this;
}

namespace {

// fill_ and zero_, each named as itself in its profile entry and its errors.
Tensor& fill_tensor(Tensor& self, double value, const char* op) {
  const ProfileScope profile(op, {self});
  check_defined(self, op, "self");
  autograd::check_inplace(self, op);
  if (self.numel() > 0) kernels_for<CopyKernels>(self.device()).fill(self, value);
  self.bump_version();
  return self;
}

}  // namespace

Tensor& Tensor::fill_(double value) { return fill_tensor(*this, value, "fill_"); }

Tensor& Tensor::zero_() { return fill_tensor(*this, 0, "zero_"); }

Tensor Tensor::to(Device device, DType dtype) const {
  if (device == this->device() && dtype == this->dtype()) return *this;
  const ProfileScope profile("to", {*this});
  MINIDL_CHECK(!(device.is_cuda() && dtype == kFloat64),
               "to: float64 tensors are supported on the CPU only, cannot move to ", device);
  // PyTorch's preserve_format: a dense tensor keeps its strides (a channels-last batch stays
  // channels-last on the GPU); any other is made contiguous.
  const TensorOptions options = TensorOptions(dtype).device(device);
  Tensor out = is_non_overlapping_and_dense(*this) ? empty_strided(sizes(), strides(), options)
                                                   : empty(sizes(), options);
  {
    NoGradGuard no_grad;
    copy_data(out, *this);
  }
  if (autograd::needs_grad({*this})) {
    MINIDL_CHECK(minidl::is_floating_point(dtype), "to: cannot keep gradients when converting ",
                 "to ", dtype, "; detach() first");
    const Device from_device = this->device();
    const DType from_dtype = this->dtype();
    autograd::record(
        out, "ToCopyBackward", {*this},
        [from_device, from_dtype](const Tensor& grad) {
          return std::vector<Tensor>{grad.to(from_device, from_dtype)};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor Tensor::to(Device device) const { return to(device, dtype()); }
Tensor Tensor::to(DType dtype) const { return to(device(), dtype); }

Tensor Tensor::clone() const {
  return copy_in_layout(*this, MemoryFormat::Contiguous, "clone", "CloneBackward");
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Contiguous) return contiguous();
  if (is_contiguous(format)) return *this;
  return copy_in_layout(*this, format, "contiguous", "ToChannelsLastBackward");
}

}  // namespace minidl
