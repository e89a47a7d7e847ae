#pragma once
// Tensor: a handle to shared state (storage, sizes, strides, offset, dtype, autograd metadata).
// Copying a Tensor aliases it, as in LibTorch. Views share storage. Methods that compute are
// thin forwards to the free functions in ops/ (declared there, defined in ops/tensor_methods.cpp).
#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "minidl/core/device.h"
#include "minidl/core/dtype.h"
#include "minidl/core/indexing.h"
#include "minidl/core/scalar.h"
#include "minidl/core/storage.h"
#include "minidl/core/tensor_options.h"

namespace minidl {

class Tensor;
namespace autograd {
class Node;
}

using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;
// A hook on a tensor's gradient (Tensor::register_hook): returns the gradient to use instead,
// or an undefined tensor to keep the one it was given.
using GradHook = std::function<Tensor(const Tensor& grad)>;

// Autograd state, created on first use.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<struct TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;         // null for leaves
  uint32_t output_nr = 0;                          // which of grad_fn's outputs this is
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves: the node that writes .grad
  std::vector<std::pair<int, PostAccumulateGradHook>> post_accumulate_grad_hooks;
  // Leaves only: hooks on the incoming gradient, run before it is added to .grad. A non-leaf's
  // hooks live on its grad_fn (autograd::Node::grad_hooks[output_nr]), which runs them.
  std::vector<std::pair<int, GradHook>> grad_hooks;
  int next_hook_id = 0;  // handles of both kinds of hook
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements
  DType dtype = kFloat32;
  std::unique_ptr<AutogradMeta> autograd;

  AutogradMeta& autograd_meta();  // creates it on first use
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& sizes() const { return impl().sizes; }
  const Shape& strides() const { return impl().strides; }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  int64_t numel() const;
  int64_t storage_offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  DType scalar_type() const { return dtype(); }
  size_t element_size() const { return minidl::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  Device device() const { return impl().storage->device(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_floating_point() const { return minidl::is_floating_point(dtype()); }
  bool is_contiguous() const;
  bool is_contiguous(MemoryFormat format) const;
  // ChannelsLast when this 4-D tensor has NHWC strides (and is not also plain contiguous).
  MemoryFormat suggest_memory_format() const;
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  // Pointer to element [0, 0, ...] (storage offset applied).
  void* data_ptr() const;
  template <class T>
  T* data_ptr() const {
    MINIDL_CHECK(dtype_of_v<T> == dtype(), "data_ptr<", dtype_name(dtype_of_v<T>),
                 ">: tensor has dtype ", dtype());
    return static_cast<T*>(data_ptr());
  }
  // The single value of a one-element tensor, copied to the host (synchronises with the device).
  template <class T>
  T item() const;
  // The same storage without autograd metadata; shares the version counter.
  Tensor detach() const;
  TensorImpl* unsafe_impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  std::string str() const;  // PyTorch-style printing

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool value = true);  // leaves only
  bool is_leaf() const;
  Tensor grad() const;  // undefined until a backward reaches this leaf
  void set_grad(const Tensor& grad);
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Backpropagates from this tensor. `gradient` may be omitted for one-element tensors.
  // retain_graph defaults to create_graph; create_graph records the gradients' own graph (their
  // .grad gets a grad_fn), for higher-order gradients, as PyTorch's backward(create_graph=True).
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // Called once per backward, after this leaf's .grad holds its final value. Returns a handle.
  int register_post_accumulate_grad_hook(PostAccumulateGradHook hook);
  void remove_post_accumulate_grad_hook(int handle);
  // Runs `hook` on this tensor's gradient each time a backward pass computes it, as PyTorch's
  // Tensor.register_hook: on a non-leaf once the gradient of its value is complete, before it
  // flows on to the op that produced it; on a leaf before it is added to .grad. A hook that
  // returns a defined tensor (same shape, dtype and device) replaces the gradient for what
  // follows (later hooks, the producing op's backward, .grad); one that returns an undefined
  // tensor, or nothing, keeps it. Hooks run in registration order, with grad mode off; return a
  // new tensor rather than changing the given one in place. The tensor must require grad.
  // Returns a handle for remove_hook.
  int register_hook(GradHook hook);
  int register_hook(std::function<void(const Tensor& grad)> hook);
  template <class Hook>
  requires std::is_invocable_v<Hook&, const Tensor&>
  int register_hook(Hook hook) {  // lambdas: returning a Tensor, or void
    if constexpr (std::is_void_v<std::invoke_result_t<Hook&, const Tensor&>>)
      return register_hook(std::function<void(const Tensor&)>(std::move(hook)));
    else
      return register_hook(GradHook(std::move(hook)));
  }
  // Removes the hook `handle`; a handle already removed is ignored.
  void remove_hook(int handle);
  uint64_t version() const { return impl().storage->version(); }
  void bump_version() const { impl().storage->bump_version(); }

  // ---- views (share storage; defined in ops/view.cpp) ----
  Tensor view(const Shape& shape) const;     // one size may be -1
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor permute(const Shape& dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor expand(const Shape& sizes) const;  // -1 keeps a size
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  // Views of consecutive pieces along `dim`, as torch.Tensor.split: pieces of split_size (the
  // last one smaller when it does not divide), or of the given sizes. split_size is a template
  // so that x.split({2}) means the list of sizes [2], as in PyTorch.
  template <std::integral Size>
  std::vector<Tensor> split(Size split_size, int64_t dim = 0) const {
    return split_evenly(static_cast<int64_t>(split_size), dim);
  }
  std::vector<Tensor> split(const Shape& split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(const Shape& split_sizes, int64_t dim = 0) const {
    return split(split_sizes, dim);
  }
  // The transpose of the last two dimensions (a view), as torch.Tensor.mT.
  Tensor mT() const { return transpose(-2, -1); }
  // Copies that rearrange (ops/shape.h).
  Tensor flip(const Shape& dims) const;
  Tensor roll(const Shape& shifts, const Shape& dims = {}) const;
  Tensor repeat(const Shape& repeats) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  // At most `chunks` views of ceil(size / chunks) along `dim` (fewer when they run out).
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  // The views x.select(dim, i) for every i.
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor contiguous() const;
  Tensor contiguous(MemoryFormat format) const;  // a copy unless already laid out so

  // ---- indexing (views; core/indexing.cpp) ----
  // x[i] is x.select(0, i), as in LibTorch.
  Tensor operator[](int64_t index) const;
  // x.index({Slice(1, None), 0, None, "..."}): integers, slices, None and Ellipsis, as
  // torch::indexing (see core/indexing.h), a view; with bool mask or int64 index tensors among
  // them, a copy: x.index({mask}) is x[mask], the selected elements (rows) in row-major order,
  // x.index({Slice(), indices}) is x[:, indices].
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  // x[indices] = values in place, for indices with at least one tensor (a bool mask or an
  // int64 index), as LibTorch's index_put_; values broadcast to x.index(indices)'s shape.
  // accumulate adds instead (repeated indices add up, in position order). Defined in
  // ops/advanced_indexing.cpp; index_put (ops/indexing.h) is the differentiable copy.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                     bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, double value);

  // ---- copies and conversion (ops/copy.cpp) ----
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }
  Tensor clone() const;
  Tensor& copy_(const Tensor& src);  // broadcasts src, converts dtype, crosses devices
  Tensor& fill_(double value);
  Tensor& zero_();

  // ---- math (forwards to ops/*) ----
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  // sin ... square: as the free functions of ops/elementwise.h.
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor exp2() const;
  Tensor expm1() const;
  Tensor log1p() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor erf() const;
  Tensor erfc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor trunc() const;
  Tensor round() const;
  Tensor frac() const;
  Tensor sign() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor square() const;
  Tensor pow(Scalar exponent) const;
  // clamp ... clamp_max: as the free functions of ops/elementwise.h, with scalar bounds (either
  // may be std::nullopt: x.clamp(std::nullopt, 1.0)) or tensor bounds (broadcast with x), as
  // LibTorch's Tensor::clamp.
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const std::optional<Tensor>& min,
               const std::optional<Tensor>& max = std::nullopt) const;
  Tensor clamp_min(Scalar min) const;
  Tensor clamp_min(const Tensor& min) const;
  Tensor clamp_max(Scalar max) const;
  Tensor clamp_max(const Tensor& max) const;
  Tensor add(const Tensor& other, double alpha = 1) const;
  Tensor sub(const Tensor& other, double alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor add(Scalar other) const;
  Tensor sub(Scalar other) const;
  Tensor mul(Scalar other) const;
  Tensor div(Scalar other) const;
  // atan2 ... logical_xor: as the free functions of ops/elementwise.h.
  Tensor atan2(const Tensor& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(Scalar other) const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(Scalar other) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_xor(const Tensor& other) const;
  // ops/closeness.h: element-wise |x - other| <= atol + rtol |other| (bool), whether every
  // element is, and whether both have the same sizes and values.
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
                 bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  // x.sum(-1): one dimension. A template, so that a braced list (x.sum({}), every dimension;
  // x.sum({0})) still means a list of dimensions.
  template <std::integral Dim>
  Tensor sum(Dim dim, bool keepdim = false) const {
    return sum(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  template <std::integral Dim>
  Tensor mean(Dim dim, bool keepdim = false) const {
    return mean(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  Tensor max() const;
  Tensor min() const;
  // (values, int64 indices) along `dim`, as torch::max(x, dim).
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  // ops/reduce.h; an empty dims list reduces every dim.
  Tensor var(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor amax(const Shape& dims = {}, bool keepdim = false) const;
  Tensor amin(const Shape& dims = {}, bool keepdim = false) const;
  Tensor logsumexp(const Shape& dims, bool keepdim = false) const;
  Tensor any(const Shape& dims = {}, bool keepdim = false) const;
  Tensor all(const Shape& dims = {}, bool keepdim = false) const;
  // ops/sort.h: (values, int64 indices).
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false,
                                  bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  // ops/masking.h
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor log_softmax(int64_t dim) const;
  // ops/scan.h
  Tensor cumsum(int64_t dim) const;
  Tensor cumprod(int64_t dim) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  // ops/reduce.h's vector norm: x.norm(), x.norm(1, {-1}, true).
  Tensor norm(double p = 2, const Shape& dims = {}, bool keepdim = false) const;
  // ops/indexing.h, and masked_select of ops/masking.h
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1) const;
  Tensor masked_select(const Tensor& mask) const;
  // In-place scatter and masked fill (no autograd, as the arithmetic below; ops/indexing.cpp,
  // ops/masking.cpp): mask broadcasts to this tensor's shape.
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& masked_fill_(const Tensor& mask, double value);
  // In-place arithmetic (no autograd; error on a tensor that requires grad in grad mode).
  Tensor& add_(const Tensor& other, double alpha = 1);
  Tensor& add_(Scalar value);
  Tensor& sub_(const Tensor& other, double alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar value);
  Tensor& div_(Scalar value);
  // In-place clamp: the result type of this tensor and the bounds must fit this tensor's dtype
  // (an int64 tensor's clamp_(0.5) is an error, as PyTorch's), and tensor bounds must broadcast
  // to its shape.
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor& clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt);
  Tensor& clamp_min_(Scalar min);
  Tensor& clamp_min_(const Tensor& min);
  Tensor& clamp_max_(Scalar max);
  Tensor& clamp_max_(const Tensor& max);

 private:
  std::vector<Tensor> split_evenly(int64_t split_size, int64_t dim) const;
  // index() with tensor indices among `indices` (ops/advanced_indexing.cpp).
  Tensor index_by_tensors(const std::vector<indexing::TensorIndex>& indices) const;
  TensorImpl& impl() const {
    MINIDL_CHECK(impl_ != nullptr, "Tensor: this tensor is undefined (default-constructed)");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);
std::ostream& operator<<(std::ostream& out, const Shape& shape);  // [2, 3]
std::string shape_str(const Shape& shape);

// ---- factories (core/factories.cpp, random ones in ops/random.cpp) ----
Tensor empty(const Shape& sizes, TensorOptions options = {});
Tensor empty_strided(const Shape& sizes, const Shape& strides, TensorOptions options = {});
Tensor empty(const Shape& sizes, TensorOptions options, MemoryFormat format);
Tensor zeros(const Shape& sizes, TensorOptions options = {});
Tensor ones(const Shape& sizes, TensorOptions options = {});
Tensor full(const Shape& sizes, double value, TensorOptions options = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// [start, end) in steps of `step`, as torch::arange: the dtype is the options' when they give
// one, else int64 when every argument is an integer (arange(5)) and float32 (the default dtype)
// when any is floating-point (arange(0.0, 1.0, 0.25), arange(0, 5, 0.5), arange(24.0)). The
// values are start + i * step computed in float64, then converted, as PyTorch's CPU kernel.
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions options = {});
Tensor arange(Scalar end, TensorOptions options = {});
// Copies numel(sizes) elements of dtype options.dtype() from host memory. To borrow memory
// without a copy, as torch::from_blob, see core/from_blob.h.
Tensor from_host(const void* data, const Shape& sizes, TensorOptions options = {});
// A tensor holding `values` (1-D, or the given shape), dtype from T unless options say otherwise.
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& sizes = {});

// tensor({1, 2, 3}), tensor({{1, 2}, {3, 4}}), tensor({{{1, 2}, {3, 4}}}), tensor(3): as
// LibTorch's torch::tensor, the dtype comes from the C++ type of the values unless the options
// give one: integers are int64 (uint8_t stays uint8), float and double float32 (the default
// dtype), bool bool; a 1-D list that mixes integers and doubles ({1, 2.5}) is float32, as
// torch.tensor([1, 2.5]). A plain number gives a 0-dimensional tensor. Nested lists go up to
// 4-D; the lists at one depth must have one length (a ragged list is an error naming the dim,
// as PyTorch's "expected sequence of length 2 at dim 1 (got 3)").
template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(std::initializer_list<T> values,
                                               TensorOptions options = {});
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});
template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(std::initializer_list<std::initializer_list<T>> rows,
                                               TensorOptions options = {});
template <class T>
requires std::is_arithmetic_v<T> Tensor
tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks,
       TensorOptions options = {});
template <class T>
requires std::is_arithmetic_v<T> Tensor
tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
           batches,
       TensorOptions options = {});
template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(T value, TensorOptions options = {});
Tensor scalar_tensor(double value, TensorOptions options = {});

namespace detail {
// What tensor() infers from the C++ type T of its values (see tensor above).
template <class T>
constexpr DType inferred_dtype() {
  if constexpr (std::is_same_v<T, bool>)
    return kBool;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return kUInt8;
  else if constexpr (std::is_integral_v<T>)
    return kInt64;
  else
    return kFloat32;
}
// tensor()'s body: values already widened (int64_t, double, or bool as uint8_t bytes, whose
// dtype is `stored`), laid out row-major in `sizes`.
Tensor tensor_from_values(const void* values, DType stored, const Shape& sizes, DType inferred,
                          TensorOptions options);
template <class T>
using widened_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t,
                                     std::conditional_t<std::is_integral_v<T>, int64_t, double>>;
template <class T>
Tensor tensor_from(const std::vector<widened_t<T>>& values, const Shape& sizes,
                   TensorOptions options) {
  return tensor_from_values(values.data(),
                            std::is_same_v<T, bool> ? kBool : dtype_of_v<widened_t<T>>, sizes,
                            inferred_dtype<T>(), options);
}

// A nested initializer list's depth (its number of dims) and the type of its values.
template <class T>
struct NestedList {
  using Value = T;
  static constexpr size_t depth = 0;
};
template <class T>
struct NestedList<std::initializer_list<T>> {
  using Value = typename NestedList<T>::Value;
  static constexpr size_t depth = NestedList<T>::depth + 1;
};

// The sizes of a nested list, read along its first elements (0 below an empty list).
template <class List>
void nested_sizes(const List& list, Shape& sizes) {
  if constexpr (NestedList<List>::depth > 0) {
    sizes.push_back(static_cast<int64_t>(list.size()));
    if (list.size() > 0)
      nested_sizes(*list.begin(), sizes);
    else
      sizes.resize(sizes.size() + NestedList<List>::depth - 1, 0);
  }
}

void check_nested_length(int64_t expected, size_t found, size_t dim);

// Appends a nested list's values row-major, checking that every list at a depth has the
// length `sizes` gives there.
template <class List, class Value>
void flatten_nested(const List& list, const Shape& sizes, size_t dim, std::vector<Value>& values) {
  if constexpr (NestedList<List>::depth == 0) {
    values.push_back(static_cast<Value>(list));
  } else {
    check_nested_length(sizes[dim], list.size(), dim);
    for (const auto& item : list) flatten_nested(item, sizes, dim + 1, values);
  }
}

template <class List>
Tensor tensor_from_nested(const List& list, TensorOptions options) {
  using T = typename NestedList<List>::Value;
  Shape sizes;
  nested_sizes(list, sizes);
  std::vector<widened_t<T>> values;
  flatten_nested(list, sizes, 0, values);
  return tensor_from<T>(values, sizes, options);
}
}  // namespace detail

template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(std::initializer_list<T> values,
                                               TensorOptions options) {
  const std::vector<detail::widened_t<T>> widened(values.begin(), values.end());
  return detail::tensor_from<T>(widened, {static_cast<int64_t>(values.size())}, options);
}

template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(std::initializer_list<std::initializer_list<T>> rows,
                                               TensorOptions options) {
  return detail::tensor_from_nested(rows, options);
}

template <class T>
requires std::is_arithmetic_v<T> Tensor
tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks,
       TensorOptions options) {
  return detail::tensor_from_nested(blocks, options);
}

template <class T>
requires std::is_arithmetic_v<T> Tensor
tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
           batches,
       TensorOptions options) {
  return detail::tensor_from_nested(batches, options);
}

template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(T value, TensorOptions options) {
  return detail::tensor_from<T>({static_cast<detail::widened_t<T>>(value)}, {}, options);
}

// Copies the tensor's elements to a host vector of T (converting; for tests and printing).
template <class T>
std::vector<T> to_vector(const Tensor& t);

// Row-major (C-contiguous) strides for `sizes`.
Shape contiguous_strides(const Shape& sizes);
// Strides of `sizes` (4-D, NCHW) laid out in `format`.
Shape strides_for(const Shape& sizes, MemoryFormat format);
int64_t shape_numel(const Shape& sizes);
// Wraps a possibly negative dim into [0, ndim); `op` names the caller in the error.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// Ops check their tensor arguments with this first, so that an undefined one is reported as
// "add: argument 'other' is an undefined tensor (default-constructed)", naming the op and the
// argument, rather than by the first accessor that reaches it.
inline void check_defined(const Tensor& t, const char* op, const char* argument) {
  MINIDL_CHECK(t.defined(), op, ": argument '", argument,
               "' is an undefined tensor (default-constructed)");
}
// A new tensor aliasing `base`'s storage with other sizes/strides/offset (no autograd).
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset);

}  // namespace minidl
