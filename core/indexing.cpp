// Basic indexing: a list of TensorIndex applied as a chain of views (select for an integer,
// slice for a Slice, unsqueeze for None), left to right, as PyTorch's applySlicing does.
#include "minidl/core/indexing.h"

#include <cstring>
#include <limits>
#include <sstream>

#include "minidl/core/error.h"
#include "minidl/core/tensor.h"

namespace minidl {

namespace indexing {

Slice::Slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step)
    : start_(start.value_or(0)),
      stop_(stop.value_or(std::numeric_limits<int64_t>::max())),
      step_(step.value_or(1)) {
  MINIDL_CHECK(step_ > 0, "Slice: step must be greater than zero, got ", step_,
               " (PyTorch's tensor indexing has no negative steps either; reverse a dim with "
               "x.flip({dim}), then slice it with a positive step)");
}

std::string to_string(const Slice& slice) {
  std::ostringstream out;
  out << slice.start() << ':';
  if (slice.stop() == std::numeric_limits<int64_t>::max())
    out << "None";
  else
    out << slice.stop();
  out << ':' << slice.step();
  return out.str();
}

TensorIndex::TensorIndex(const char* ellipsis) : kind_(Kind::Ellipsis) {
  MINIDL_CHECK(ellipsis != nullptr && std::strcmp(ellipsis, "...") == 0,
               "TensorIndex: expected \"...\" to represent an ellipsis index, but got \"",
               ellipsis == nullptr ? "(null)" : ellipsis, "\"");
}

TensorIndex::TensorIndex(const Tensor& tensor)
    : kind_(Kind::Tensor), tensor_(std::make_shared<const Tensor>(tensor)) {
  MINIDL_CHECK(tensor.defined(),
               "TensorIndex: the index tensor is undefined (default-constructed)");
}

std::string to_string(const TensorIndex& index) {
  switch (index.kind()) {
    case TensorIndex::Kind::None: return "None";
    case TensorIndex::Kind::Ellipsis: return "...";
    case TensorIndex::Kind::Integer: return std::to_string(index.integer());
    case TensorIndex::Kind::Slice: return to_string(index.slice());
    case TensorIndex::Kind::Tensor: {
      std::ostringstream out;
      out << "Tensor" << index.tensor().sizes() << ' ' << index.tensor().dtype();
      return out.str();
    }
  }
  return "?";
}

}  // namespace indexing

namespace {

std::string indices_str(const std::vector<indexing::TensorIndex>& indices) {
  std::string out = "{";
  for (size_t i = 0; i < indices.size(); ++i)
    out += (i ? ", " : "") + indexing::to_string(indices[i]);
  return out + "}";
}

}  // namespace

namespace indexing {

Tensor apply_basic_indices(const Tensor& x, const std::vector<TensorIndex>& indices,
                           std::vector<TensorIndexPlace>* places) {
  // The dims of x each index takes: an integer or slice one, an int64 tensor one, a mask its own.
  const auto dims_taken = [](const TensorIndex& index) -> int64_t {
    if (index.is_integer() || index.is_slice()) return 1;
    if (index.is_tensor()) return index.tensor().dtype() == kBool ? index.tensor().dim() : 1;
    return 0;
  };
  int64_t consumed = 0;
  int ellipses = 0;
  for (const TensorIndex& index : indices) {
    consumed += dims_taken(index);
    if (index.is_ellipsis()) ++ellipses;
  }
  MINIDL_CHECK(ellipses <= 1, "index: an index can only have a single ellipsis ('...'), got ",
               indices_str(indices));
  MINIDL_CHECK(consumed <= x.dim(), "index: too many indices for a tensor of dimension ", x.dim(),
               " (shape ", x.sizes(), "): ", indices_str(indices));

  Tensor result = x;
  int64_t result_dim = 0;  // where the next index applies in `result`
  int64_t source_dim = 0;  // the same dim counted in x, for error messages
  for (const TensorIndex& index : indices) {
    switch (index.kind()) {
      case TensorIndex::Kind::Integer: {
        const int64_t size = result.size(result_dim);
        const int64_t i = index.integer();
        MINIDL_CHECK(i >= -size && i < size, "index: index ", i, " is out of range for dimension ",
                     source_dim, " with size ", size, " (tensor of shape ", x.sizes(), ", indices ",
                     indices_str(indices), ")");
        result = result.select(result_dim, i);  // the dim disappears
        ++source_dim;
        break;
      }
      case TensorIndex::Kind::Slice: {
        const Slice& slice = index.slice();
        result = result.slice(result_dim, slice.start(), slice.stop(), slice.step());
        ++result_dim;
        ++source_dim;
        break;
      }
      case TensorIndex::Kind::None:
        result = result.unsqueeze(result_dim);
        ++result_dim;
        break;
      case TensorIndex::Kind::Tensor:  // its dims stay, for the tensor indexing that follows
        if (places != nullptr) places->push_back({result_dim, source_dim});
        result_dim += dims_taken(index);
        source_dim += dims_taken(index);
        break;
      case TensorIndex::Kind::Ellipsis: {
        const int64_t skipped = x.dim() - consumed;  // the dims "..." stands for
        result_dim += skipped;
        source_dim += skipped;
        break;
      }
    }
  }
  return result;
}

std::string to_string(const std::vector<TensorIndex>& indices) { return indices_str(indices); }

}  // namespace indexing

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  MINIDL_CHECK(defined(), "index: this tensor is undefined (default-constructed)");
  for (const indexing::TensorIndex& index : indices)
    if (index.is_tensor()) return index_by_tensors(indices);
  return indexing::apply_basic_indices(*this, indices, nullptr);
}

Tensor Tensor::operator[](int64_t index) const {
  MINIDL_CHECK(defined(), "operator[]: this tensor is undefined (default-constructed)");
  MINIDL_CHECK(dim() > 0, "operator[]: cannot index a 0-d tensor (shape [])");
  return select(0, index);
}

}  // namespace minidl
