// Joining, gathering and encoding: cat, stack, index_select, one_hot. (The views declared in
// ops/shape.h live in ops/view.cpp.)
//
// cat copies each input into its slice of the output with copy_ on narrow() views, which works
// on both devices; its backward hands each input its slice of the gradient. index_select
// gathers rows through a kernel and scatters them back with index_add in backward.
#include "minidl/ops/shape.h"

#include <algorithm>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/dispatch.h"
#include "minidl/core/profiler.h"
#include "minidl/ops/indexing.h"
#include "minidl/ops/shape_kernels.h"

namespace minidl {

namespace {

void check_cat_inputs(const std::vector<Tensor>& tensors, int64_t dim) {
  const Tensor& first = tensors[0];
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    MINIDL_CHECK(t.defined(), "cat: tensor at position ", i, " is undefined");
    MINIDL_CHECK(t.dim() > 0, "cat: zero-dimensional tensor (at position ", i,
                 ") cannot be concatenated; unsqueeze it or use stack");
    MINIDL_CHECK(t.dtype() == first.dtype() && t.device() == first.device(),
                 "cat: expected tensors of one dtype and device, got ", first.dtype(), " on ",
                 first.device(), " at position 0 and ", t.dtype(), " on ", t.device(),
                 " at position ", i);
    bool sizes_match = t.dim() == first.dim();
    for (int64_t d = 0; sizes_match && d < t.dim(); ++d)
      sizes_match = d == dim || t.size(d) == first.size(d);
    MINIDL_CHECK(sizes_match, "cat: expected tensors of equal shape except in dimension ", dim,
                 ", got ", first.sizes(), " at position 0 and ", t.sizes(), " at position ", i);
  }
}

// Writes `x`'s rows at `index` along `dim` into `out`; all contiguous, on one device.
void index_select_into(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  kernels_for<ShapeKernels>(x.device()).index_select(out, x, dim, index);
}

// grad_x += `grad`'s rows scattered to `index` along `dim`; all contiguous, on one device.
void index_add_into(const Tensor& grad_x, const Tensor& grad, int64_t dim, const Tensor& index) {
  if (grad.numel() == 0) return;
  kernels_for<ShapeKernels>(grad.device()).index_add(grad_x, grad, dim, index);
}

// The largest label, read on the host (so a CUDA tensor is copied over and the host waits).
int64_t largest_label(const Tensor& labels) {
  const Tensor host = labels.cpu().contiguous();
  const int64_t* values = host.data_ptr<int64_t>();
  return *std::max_element(values, values + host.numel());
}

// The result's layout, by PyTorch's rule: the inputs' memory format when they all suggest the
// same one (channels-last feature maps stay channels-last), else contiguous.
MemoryFormat cat_format(const std::vector<Tensor>& tensors) {
  const MemoryFormat first = tensors[0].suggest_memory_format();
  for (const Tensor& t : tensors)
    if (t.suggest_memory_format() != first) return MemoryFormat::Contiguous;
  return first;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  const ProfileScope profile("cat");  // its inputs are a list: no input shapes
  MINIDL_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  MINIDL_CHECK(tensors[0].defined(), "cat: tensor at position 0 is undefined");
  const int64_t d = wrap_dim(dim, tensors[0].dim(), "cat");
  check_cat_inputs(tensors, d);

  Shape out_sizes = tensors[0].sizes();
  out_sizes[d] = 0;
  std::vector<int64_t> lengths;  // of each input along d
  for (const Tensor& t : tensors) {
    lengths.push_back(t.size(d));
    out_sizes[d] += t.size(d);
  }
  Tensor out = empty(out_sizes, tensors[0].options(), cat_format(tensors));
  {
    NoGradGuard no_grad;
    int64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (lengths[i] > 0) out.narrow(d, offset, lengths[i]).copy_(tensors[i]);
      offset += lengths[i];
    }
  }
  autograd::record(
      out, "CatBackward", tensors,
      [d, lengths](const Tensor& grad) {
        std::vector<Tensor> grads;
        int64_t offset = 0;
        for (int64_t length : lengths) {
          grads.push_back(grad.narrow(d, offset, length));
          offset += length;
        }
        return grads;
      },
      autograd::DoubleBackward::kSupported);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  const ProfileScope profile("stack");
  MINIDL_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    MINIDL_CHECK(tensors[i].defined(), "stack: tensor at position ", i, " is undefined");
    MINIDL_CHECK(tensors[i].sizes() == tensors[0].sizes(),
                 "stack: expected tensors of equal shape, got ", tensors[0].sizes(),
                 " at position 0 and ", tensors[i].sizes(), " at position ", i);
  }
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (const Tensor& t : tensors) unsqueezed.push_back(t.unsqueeze(d));
  return cat(unsqueezed, d);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const ProfileScope profile("index_select", {x, index});
  check_defined(x, "index_select", "input");
  check_defined(index, "index_select", "index");
  MINIDL_CHECK(index.dtype() == kInt64 && index.dim() == 1,
               "index_select: expected a 1-D int64 index, got ", index.dtype(), " of shape ",
               index.sizes());
  MINIDL_CHECK(x.dim() >= 1, "index_select: expected an input with at least one dimension, got ",
               "a 0-d tensor");
  MINIDL_CHECK(index.device() == x.device(), "index_select: expected the index on the input's ",
               "device ", x.device(), ", got ", index.device());
  const int64_t d = wrap_dim(dim, x.dim(), "index_select");
  Shape out_sizes = x.sizes();
  out_sizes[d] = index.numel();
  Tensor out = empty(out_sizes, x.options());
  const Tensor index_contiguous = index.contiguous();
  {
    NoGradGuard no_grad;
    index_select_into(out, x.contiguous(), d, index_contiguous);
  }
  if (autograd::needs_grad({x})) {
    autograd::SavedTensor saved_index(index_contiguous, "index_select");
    const Shape& x_sizes = x.sizes();
    autograd::record(
        out, "IndexSelectBackward", {x},
        [saved_index, x_sizes, d](const Tensor& grad) {
          Tensor grad_x = zeros(x_sizes, grad.options());
          // Under create_graph, the recorded index_add: differentiable again.
          if (GradMode::is_enabled())
            return std::vector<Tensor>{index_add(grad_x, d, saved_index.get(), grad)};
          index_add_into(grad_x, grad.contiguous(), d, saved_index.get());
          return std::vector<Tensor>{grad_x};
        },
        autograd::DoubleBackward::kSupported);
  }
  return out;
}

Tensor one_hot(const Tensor& labels, int64_t num_classes) {
  const ProfileScope profile("one_hot", {labels});
  check_defined(labels, "one_hot", "labels");
  MINIDL_CHECK(labels.dtype() == kInt64, "one_hot: expected int64 labels, got ", labels.dtype(),
               " of shape ", labels.sizes());
  MINIDL_CHECK(num_classes == -1 || num_classes > 0, "one_hot: num_classes must be positive, ",
               "or -1 to take the largest label + 1, got ", num_classes);
  if (num_classes == -1) {
    MINIDL_CHECK(labels.numel() > 0, "one_hot: cannot take num_classes from empty labels of ",
                 "shape ", labels.sizes(), "; pass num_classes");
    // A negative largest label still gives one class, so the kernel reports the bad label.
    num_classes = std::max<int64_t>(largest_label(labels) + 1, 1);
  }
  Shape out_sizes = labels.sizes();
  out_sizes.push_back(num_classes);
  Tensor out = empty(out_sizes, TensorOptions(kInt64).device(labels.device()));
  const Tensor labels_contiguous = labels.contiguous();
  kernels_for<ShapeKernels>(labels.device()).one_hot(out, labels_contiguous, num_classes);
  return out;
}

}  // namespace minidl
