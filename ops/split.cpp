// Splitting a tensor into views along one dimension: split, chunk, unbind (as torch.split,
// torch.chunk and torch.unbind). Each piece is a narrow (or select) view, so its gradient flows
// back into the part of the input it covers.
#include <numeric>
#include <string>

#include "minidl/ops/ceil_div.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

int64_t split_dim(const Tensor& x, int64_t dim, const char* op) {
  MINIDL_CHECK(x.dim() > 0, op, ": expected a tensor with at least one dimension, got a 0-d one");
  return wrap_dim(dim, x.dim(), op);
}

}  // namespace

std::vector<Tensor> Tensor::split_evenly(int64_t split_size, int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "split");
  const int64_t size = this->size(d);
  MINIDL_CHECK(split_size > 0 || (split_size == 0 && size == 0),
               "split: expected a split_size > 0 (0 only for a dimension of size 0), got ",
               split_size, " for dimension ", d, " of size ", size);
  if (size == 0) return {narrow(d, 0, 0)};
  std::vector<Tensor> pieces;
  for (int64_t start = 0; start < size; start += split_size)
    pieces.push_back(narrow(d, start, std::min(split_size, size - start)));
  return pieces;
}

std::vector<Tensor> Tensor::split(const Shape& split_sizes, int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "split");
  const int64_t total = std::accumulate(split_sizes.begin(), split_sizes.end(), int64_t{0});
  for (int64_t piece : split_sizes)
    MINIDL_CHECK(piece >= 0, "split: expected non-negative split_sizes, got ", split_sizes);
  MINIDL_CHECK(total == size(d), "split: split_sizes ", split_sizes, " add up to ", total,
               ", but dimension ", d, " of shape ", sizes(), " has size ", size(d));
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t piece : split_sizes) {
    pieces.push_back(narrow(d, start, piece));
    start += piece;
  }
  return pieces;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "chunk");
  MINIDL_CHECK(chunks > 0, "chunk: expected chunks > 0, got ", chunks);
  // An empty dimension gives `chunks` empty pieces, as PyTorch's.
  if (size(d) == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), narrow(d, 0, 0));
  return split_evenly(ceil_div(size(d), chunks), d);
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "unbind");
  std::vector<Tensor> pieces;
  for (int64_t i = 0; i < size(d); ++i) pieces.push_back(select(d, i));
  return pieces;
}

std::vector<Tensor> split(const Tensor& x, const Shape& split_sizes, int64_t dim) {
  return x.split(split_sizes, dim);
}
std::vector<Tensor> split_with_sizes(const Tensor& x, const Shape& split_sizes, int64_t dim) {
  return x.split(split_sizes, dim);
}
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  return x.chunk(chunks, dim);
}
std::vector<Tensor> unbind(const Tensor& x, int64_t dim) { return x.unbind(dim); }

}  // namespace minidl
