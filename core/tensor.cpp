#include "minidl/core/tensor.h"

#include <sstream>

#include "minidl/core/autograd/engine.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/node.h"

namespace minidl {

AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<AutogradMeta>();
  return *autograd;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t rank = ndim == 0 ? 1 : ndim;  // a 0-d tensor accepts dim 0 and -1
  MINIDL_CHECK(dim >= -rank && dim < rank, op, ": dimension out of range (expected to be in [",
               -rank, ", ", rank - 1, "], got ", dim, ")");
  return dim < 0 ? dim + rank : dim;
}

int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

Shape strides_for(const Shape& sizes, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return contiguous_strides(sizes);
  MINIDL_CHECK(sizes.size() == 4, "channels-last layout needs a 4-D [N, C, H, W] shape, got ",
               sizes);
  const int64_t c = std::max<int64_t>(sizes[1], 1), h = std::max<int64_t>(sizes[2], 1),
                w = std::max<int64_t>(sizes[3], 1);
  return {h * w * c, 1, w * c, c};
}

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape_str(shape); }

int64_t Tensor::size(int64_t dim) const { return sizes()[wrap_dim(dim, this->dim(), "size")]; }

int64_t Tensor::stride(int64_t dim) const {
  return strides()[wrap_dim(dim, this->dim(), "stride")];
}

int64_t Tensor::numel() const { return shape_numel(sizes()); }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // as PyTorch: an empty tensor has no layout to violate
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (sizes()[i] == 1) continue;  // the stride of a size-1 dim never matters
    if (strides()[i] != expected) return false;
    expected *= sizes()[i];
  }
  return true;
}

bool Tensor::is_contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Contiguous) return is_contiguous();
  if (dim() != 4) return false;
  if (numel() == 0) return true;
  const Shape expected = strides_for(sizes(), MemoryFormat::ChannelsLast);
  for (int64_t d = 0; d < 4; ++d)
    if (sizes()[d] != 1 && strides()[d] != expected[d]) return false;
  return true;
}

MemoryFormat Tensor::suggest_memory_format() const {
  return !is_contiguous() && is_contiguous(MemoryFormat::ChannelsLast) ? MemoryFormat::ChannelsLast
                                                                       : MemoryFormat::Contiguous;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(impl().storage->data()) + impl().offset * element_size();
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

Tensor Tensor::detach() const { return make_view(*this, sizes(), strides(), storage_offset()); }

bool Tensor::requires_grad() const {
  return impl().autograd != nullptr && impl().autograd->requires_grad;
}

Tensor& Tensor::requires_grad_(bool value) {
  MINIDL_CHECK(is_leaf(), "requires_grad_: can only change requires_grad of leaf tensors; ",
               "use detach() to get a leaf from a non-leaf tensor");
  MINIDL_CHECK(!value || is_floating_point(),
               "requires_grad_: only floating-point tensors can require gradients, got ", dtype());
  impl().autograd_meta().requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const {
  return impl().autograd == nullptr || impl().autograd->grad_fn == nullptr;
}

Tensor Tensor::grad() const {
  if (impl().autograd == nullptr || impl().autograd->grad == nullptr) return Tensor();
  return Tensor(impl().autograd->grad);
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined()) {
    MINIDL_CHECK(grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device(),
                 "set_grad: expected a gradient of shape ", sizes(), ", dtype ", dtype(), " on ",
                 device(), ", got shape ", grad.sizes(), ", dtype ", grad.dtype(), " on ",
                 grad.device());
  }
  impl().autograd_meta().grad = grad.impl_ptr();
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  return impl().autograd ? impl().autograd->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward(*this, gradient, retain_graph, create_graph);
}

int Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) {
  MINIDL_CHECK(is_leaf() && requires_grad(),
               "register_post_accumulate_grad_hook: expected a leaf tensor that requires grad");
  AutogradMeta& meta = impl().autograd_meta();
  const int id = meta.next_hook_id++;
  meta.post_accumulate_grad_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_post_accumulate_grad_hook(int handle) {
  if (impl().autograd == nullptr) return;
  std::erase_if(impl().autograd->post_accumulate_grad_hooks,
                [handle](const auto& entry) { return entry.first == handle; });
}

int Tensor::register_hook(GradHook hook) {
  MINIDL_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't ",
               "require gradient (shape ", sizes(), ", dtype ", dtype(),
               "); call requires_grad_() on the leaf first");
  MINIDL_CHECK(hook != nullptr, "register_hook: expected a hook, got an empty std::function");
  AutogradMeta& meta = impl().autograd_meta();
  const int id = meta.next_hook_id++;
  // A non-leaf's hooks go to its grad_fn, where its gradient is complete; the node lives as
  // long as the graph does, also after this tensor is gone (as PyTorch's).
  auto& hooks = meta.grad_fn ? meta.grad_fn->grad_hooks[meta.output_nr] : meta.grad_hooks;
  hooks.emplace_back(id, std::move(hook));
  return id;
}

int Tensor::register_hook(std::function<void(const Tensor& grad)> hook) {
  MINIDL_CHECK(hook != nullptr, "register_hook: expected a hook, got an empty std::function");
  return register_hook(GradHook([observe = std::move(hook)](const Tensor& grad) {
    observe(grad);
    return Tensor();
  }));
}

void Tensor::remove_hook(int handle) {
  if (impl().autograd == nullptr) return;
  AutogradMeta& meta = *impl().autograd;
  auto& hooks = meta.grad_fn ? meta.grad_fn->grad_hooks[meta.output_nr] : meta.grad_hooks;
  std::erase_if(hooks, [handle](const auto& entry) { return entry.first == handle; });
}

template <class T>
T Tensor::item() const {
  MINIDL_CHECK(numel() == 1, "item: expected a tensor with one element, got shape ", sizes());
  return to_vector<T>(*this)[0];
}

template <class T>
std::vector<T> to_vector(const Tensor& t) {
  Tensor host = t.detach().to(Device(kCPU)).contiguous();
  std::vector<T> values(static_cast<size_t>(host.numel()));
  visit_dtype(host.dtype(), [&](auto zero) {
    using S = decltype(zero);
    const S* data = static_cast<const S*>(host.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
        values[i] = static_cast<T>(static_cast<float>(data[i]));
      } else {
        values[i] = static_cast<T>(data[i]);
      }
    }
  });
  return values;
}

#define MINIDL_INSTANTIATE(T)         \
  template T Tensor::item<T>() const; \
  template std::vector<T> to_vector<T>(const Tensor&);
MINIDL_INSTANTIATE(float)
MINIDL_INSTANTIATE(double)
MINIDL_INSTANTIATE(int32_t)
MINIDL_INSTANTIATE(int64_t)
MINIDL_INSTANTIATE(uint8_t)
MINIDL_INSTANTIATE(bool)
#undef MINIDL_INSTANTIATE

}  // namespace minidl
