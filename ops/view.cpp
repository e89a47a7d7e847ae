// Views: new sizes/strides/offset over the same storage, each with its backward.
#include <numeric>
#include <optional>

#include "minidl/core/autograd/function.h"
#include "minidl/ops/broadcast.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

// Resolves one -1 in `shape` from numel.
Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      MINIDL_CHECK(!infer, op, ": only one dimension can be -1, got shape ", shape);
      infer = i;
    } else {
      MINIDL_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in shape ", shape);
      known *= out[i];
    }
  }
  if (infer) {
    MINIDL_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape,
                 " is invalid for input of size ", numel);
    out[*infer] = numel / known;
  }
  MINIDL_CHECK(shape_numel(out) == numel, op, ": shape ", shape, " is invalid for input of size ",
               numel);
  return out;
}

// Strides that let `sizes` view the memory of (old_sizes, old_strides), or nothing when the
// new shape would need a copy (it splits or merges dimensions that are not laid out
// contiguously with each other).
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& sizes) {
  if (old_sizes.empty() || shape_numel(old_sizes) == 0) return contiguous_strides(sizes);
  Shape strides(sizes.size());
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    // At the start of a chunk of dimensions that are contiguous with each other.
    if (d == 0 ||
        (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Tensor reshape_backward_view(const Tensor& self, Tensor out, const char* op) {
  const Shape& input_sizes = self.sizes();
  autograd::record(
      out, op, {self},
      [input_sizes](const Tensor& grad) { return std::vector<Tensor>{grad.reshape(input_sizes)}; },
      autograd::DoubleBackward::kSupported);
  return out;
}

// slice's gradient: `grad` placed into zeros of the input's shape (in `format`). A linear op of
// its own, recorded under create_graph so that it can be differentiated again: its backward
// slices the same range.
Tensor slice_backward(const Tensor& grad, const Shape& input_sizes, MemoryFormat format, int64_t d,
                      int64_t start, int64_t end, int64_t step) {
  Tensor full = empty(input_sizes, grad.options(), format).zero_();
  full.slice(d, start, end, step).copy_(grad);
  autograd::record(
      full, "SliceBackwardBackward", {grad},
      [d, start, end, step](const Tensor& grad_full) {
        return std::vector<Tensor>{grad_full.slice(d, start, end, step)};
      },
      autograd::DoubleBackward::kSupported);
  return full;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  Shape sizes = infer_size(shape, numel(), "view");
  std::optional<Shape> strides = view_strides(this->sizes(), this->strides(), sizes);
  MINIDL_CHECK(strides.has_value(), "view: shape ", shape, " is not compatible with the input's ",
               "size ", this->sizes(), " and stride ", this->strides(),
               " (at least one dimension spans two contiguous subspaces); use reshape instead");
  return reshape_backward_view(*this, make_view(*this, sizes, *strides, storage_offset()),
                               "ViewBackward");
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape sizes = infer_size(shape, numel(), "reshape");
  if (std::optional<Shape> strides = view_strides(this->sizes(), this->strides(), sizes))
    return reshape_backward_view(*this, make_view(*this, sizes, *strides, storage_offset()),
                                 "ReshapeBackward");
  return contiguous().view(sizes);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const int64_t d0 = wrap_dim(dim0, dim(), "transpose");
  const int64_t d1 = wrap_dim(dim1, dim(), "transpose");
  if (dim() == 0) return *this;
  Shape sizes = this->sizes(), strides = this->strides();
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  autograd::record(
      out, "TransposeBackward", {*this},
      [d0, d1](const Tensor& grad) { return std::vector<Tensor>{grad.transpose(d0, d1)}; },
      autograd::DoubleBackward::kSupported);
  return out;
}

Tensor Tensor::t() const {
  MINIDL_CHECK(dim() <= 2, "t: expected a tensor with at most 2 dimensions, got shape ", sizes());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(const Shape& dims) const {
  MINIDL_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: expected ", dim(),
               " dimensions for a tensor of shape ", sizes(), ", got ", dims);
  Shape sizes(dims.size()), strides(dims.size()), inverse(dims.size());
  std::vector<bool> used(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    MINIDL_CHECK(!used[d], "permute: dimension ", d, " repeats in ", dims);
    used[d] = true;
    sizes[i] = this->sizes()[d];
    strides[i] = this->strides()[d];
    inverse[d] = static_cast<int64_t>(i);
  }
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  autograd::record(
      out, "PermuteBackward", {*this},
      [inverse](const Tensor& grad) { return std::vector<Tensor>{grad.permute(inverse)}; },
      autograd::DoubleBackward::kSupported);
  return out;
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  const int64_t d = wrap_dim(dim, this->dim(), "slice");
  MINIDL_CHECK(this->dim() > 0, "slice: cannot slice a 0-d tensor");
  MINIDL_CHECK(step > 0, "slice: step must be positive, got ", step);
  const int64_t n = size(d);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = this->sizes(), strides = this->strides();
  sizes[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  Tensor out = make_view(*this, sizes, strides, storage_offset() + start * stride(d));
  const Shape input_sizes = this->sizes();
  // The gradient in the input's layout, so that a channels-last input's gradient adds to its
  // other gradients (a ResNet's shortcut and its convolution) in one layout.
  const MemoryFormat format = suggest_memory_format();
  autograd::record(
      out, "SliceBackward", {*this},
      [input_sizes, format, d, start, end, step](const Tensor& grad) {
        return std::vector<Tensor>{slice_backward(grad, input_sizes, format, d, start, end, step)};
      },
      autograd::DoubleBackward::kSupported);
  return out;
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  const int64_t d = wrap_dim(dim, this->dim(), "narrow");
  if (start < 0) start += size(d);
  MINIDL_CHECK(start >= 0 && length >= 0 && start + length <= size(d), "narrow: start ", start,
               " and length ", length, " are out of range for dimension ", d, " of size ", size(d));
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  const int64_t d = wrap_dim(dim, this->dim(), "select");
  MINIDL_CHECK(index >= -size(d) && index < size(d), "select: index ", index,
               " is out of range for dimension ", d, " of size ", size(d));
  if (index < 0) index += size(d);
  return narrow(d, index, 1).squeeze(d);
}

Tensor Tensor::squeeze() const {
  Shape sizes;
  for (int64_t s : this->sizes())
    if (s != 1) sizes.push_back(s);
  return reshape(sizes);
}

Tensor Tensor::squeeze(int64_t dim) const {
  if (this->dim() == 0) return *this;
  const int64_t d = wrap_dim(dim, this->dim(), "squeeze");
  if (size(d) != 1) return *this;
  Shape sizes = this->sizes(), strides = this->strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return reshape_backward_view(*this, make_view(*this, sizes, strides, storage_offset()),
                               "SqueezeBackward");
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  const int64_t d = wrap_dim(dim, this->dim() + 1, "unsqueeze");
  Shape sizes = this->sizes(), strides = this->strides();
  const int64_t stride = d < this->dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return reshape_backward_view(*this, make_view(*this, sizes, strides, storage_offset()),
                               "UnsqueezeBackward");
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t start = wrap_dim(start_dim, dim(), "flatten");
  const int64_t end = wrap_dim(end_dim, dim(), "flatten");
  MINIDL_CHECK(start <= end, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape sizes(this->sizes().begin(), this->sizes().begin() + start);
  sizes.push_back(std::accumulate(this->sizes().begin() + start, this->sizes().begin() + end + 1,
                                  int64_t{1}, std::multiplies<>()));
  sizes.insert(sizes.end(), this->sizes().begin() + end + 1, this->sizes().end());
  return reshape(sizes);
}

Tensor Tensor::expand(const Shape& sizes) const {
  MINIDL_CHECK(sizes.size() >= static_cast<size_t>(dim()), "expand: the number of sizes (",
               sizes.size(), ") must be at least the tensor's dimensions (", dim(), ")");
  Shape target = sizes;
  const size_t lead = sizes.size() - static_cast<size_t>(dim());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i >= lead && target[i] == -1) target[i] = this->sizes()[i - lead];
    MINIDL_CHECK(i < lead || this->sizes()[i - lead] == 1 || this->sizes()[i - lead] == target[i],
                 "expand: the size of shape ", this->sizes(), " must match ", sizes,
                 " at non-singleton dimension ", i);
    MINIDL_CHECK(target[i] >= 0, "expand: invalid size ", sizes[i], " in ", sizes);
  }
  Tensor out = make_view(*this, target, broadcast_strides(*this, target), storage_offset());
  const Shape input_sizes = this->sizes();
  autograd::record(
      out, "ExpandBackward", {*this},
      [input_sizes](const Tensor& grad) { return std::vector<Tensor>{sum_to(grad, input_sizes)}; },
      autograd::DoubleBackward::kSupported);
  return out;
}

Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) { return x.transpose(dim0, dim1); }
Tensor permute(const Tensor& x, const Shape& dims) { return x.permute(dims); }
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  return x.flatten(start_dim, end_dim);
}
Tensor squeeze(const Tensor& x, int64_t dim) { return x.squeeze(dim); }
Tensor unsqueeze(const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }

}  // namespace minidl
