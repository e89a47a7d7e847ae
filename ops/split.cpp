// Splitting a tensor into views along one dimension: split, chunk, unbind (as torch.split,
// torch.chunk and torch.unbind). Each piece is a narrow (or select) view of the input; the
// pieces share one graph node, whose backward writes their gradients side by side.
#include <algorithm>
#include <functional>
#include <numeric>
#include <string>

#include "minidl/core/autograd/function.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/ceil_div.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

int64_t split_dim(const Tensor& x, int64_t dim, const char* op) {
  MINIDL_CHECK(x.dim() > 0, op, ": expected a tensor with at least one dimension, got a 0-d one");
  return wrap_dim(dim, x.dim(), op);
}

// Piece `i` of a tensor shaped as the input: the view split or unbind gives.
using PieceView = std::function<Tensor(const Tensor& whole, size_t i)>;

std::vector<bool> defined_ones(const std::vector<Tensor>& tensors) {
  std::vector<bool> defined;
  for (const Tensor& t : tensors) defined.push_back(t.defined());
  return defined;
}

// Note [One node for all pieces]
// The pieces of a split are views, but each one recorded as a slice of its own would give the
// input one full-size gradient per piece, mostly zeros, which the engine then adds: for a
// GPT's q, k, v split that is three zero-filled copies of the whole [B, T, 3C] gradient and two
// additions of it. As PyTorch's SplitBackward, the pieces are instead the outputs of one node,
// which receives all their gradients and writes each into its place in one tensor (zeros where
// a piece got none), in the input's layout so that it adds to the input's other gradients in
// one layout. With create_graph that tensor is recorded, its gradient being the pieces of the
// gradient given to it.
Tensor pieces_to_whole(const std::vector<Tensor>& grads, const Shape& input_sizes,
                       MemoryFormat format, const PieceView& piece) {
  const auto given =
      std::find_if(grads.begin(), grads.end(), [](const Tensor& grad) { return grad.defined(); });
  Tensor whole = empty(input_sizes, given->options(), format);
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor destination = piece(whole, i);
      if (grads[i].defined()) {
        destination.copy_(grads[i]);
      } else {
        destination.zero_();
      }
    }
  }
  autograd::record(
      whole, "SplitBackwardBackward", grads,
      [given = defined_ones(grads), piece](const Tensor& grad_whole) {
        std::vector<Tensor> piece_grads(given.size());
        for (size_t i = 0; i < given.size(); ++i)
          if (given[i]) piece_grads[i] = piece(grad_whole, i);
        return piece_grads;
      },
      autograd::DoubleBackward::kSupported);
  return whole;
}

// The views piece(x, 0), ..., piece(x, count - 1), recorded as the outputs of one node `op`.
std::vector<Tensor> split_into(const Tensor& x, size_t count, const PieceView& piece,
                               const char* op) {
  std::vector<Tensor> pieces;
  {
    NoGradGuard no_grad;  // the views record nothing of their own
    for (size_t i = 0; i < count; ++i) pieces.push_back(piece(x, i));
  }
  autograd::record(
      pieces, op, {x},
      [input_sizes = x.sizes(), format = x.suggest_memory_format(),
       piece](std::vector<Tensor> grads) {
        return std::vector<Tensor>{pieces_to_whole(grads, input_sizes, format, piece)};
      },
      autograd::DoubleBackward::kSupported);
  return pieces;
}

// Pieces of the given lengths along d.
std::vector<Tensor> split_lengths(const Tensor& x, int64_t d, const Shape& lengths,
                                  const char* op) {
  std::vector<int64_t> starts(lengths.size(), 0);
  for (size_t i = 1; i < lengths.size(); ++i) starts[i] = starts[i - 1] + lengths[i - 1];
  return split_into(
      x, lengths.size(),
      [d, starts, lengths](const Tensor& whole, size_t i) {
        return whole.narrow(d, starts[i], lengths[i]);
      },
      op);
}

}  // namespace

std::vector<Tensor> Tensor::split_evenly(int64_t split_size, int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "split");
  const int64_t size = this->size(d);
  MINIDL_CHECK(split_size > 0 || (split_size == 0 && size == 0),
               "split: expected a split_size > 0 (0 only for a dimension of size 0), got ",
               split_size, " for dimension ", d, " of size ", size);
  if (size == 0) return split_lengths(*this, d, {0}, "SplitBackward");
  Shape lengths;
  for (int64_t start = 0; start < size; start += split_size)
    lengths.push_back(std::min(split_size, size - start));
  return split_lengths(*this, d, lengths, "SplitBackward");
}

std::vector<Tensor> Tensor::split(const Shape& split_sizes, int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "split");
  const int64_t total = std::accumulate(split_sizes.begin(), split_sizes.end(), int64_t{0});
  for (int64_t piece : split_sizes)
    MINIDL_CHECK(piece >= 0, "split: expected non-negative split_sizes, got ", split_sizes);
  MINIDL_CHECK(total == size(d), "split: split_sizes ", split_sizes, " add up to ", total,
               ", but dimension ", d, " of shape ", sizes(), " has size ", size(d));
  return split_lengths(*this, d, split_sizes, "SplitWithSizesBackward");
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "chunk");
  MINIDL_CHECK(chunks > 0, "chunk: expected chunks > 0, got ", chunks);
  // An empty dimension gives `chunks` empty pieces, as PyTorch's.
  if (size(d) == 0)
    return split_lengths(*this, d, Shape(static_cast<size_t>(chunks), 0), "SplitBackward");
  return split_evenly(ceil_div(size(d), chunks), d);
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  const int64_t d = split_dim(*this, dim, "unbind");
  return split_into(
      *this, static_cast<size_t>(size(d)),
      [d](const Tensor& whole, size_t i) { return whole.select(d, static_cast<int64_t>(i)); },
      "UnbindBackward");
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
