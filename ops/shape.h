#pragma once
// Joining, splitting, gathering and encoding. The views themselves (view, reshape, transpose,
// permute, narrow, slice, squeeze, unsqueeze, flatten, expand, split, chunk, unbind) are Tensor
// methods, with free-function forms here for LibTorch familiarity.
#include <concepts>
#include <optional>
#include <vector>

#include "minidl/core/tensor.h"

namespace minidl {

Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);

// Views of consecutive pieces along `dim` (ops/split.cpp; also Tensor methods): pieces of
// split_size, the last one smaller when it does not divide; or of the given sizes, which must add
// up to the dimension's size.
template <std::integral Size>
std::vector<Tensor> split(const Tensor& x, Size split_size, int64_t dim = 0) {
  return x.split(split_size, dim);
}
std::vector<Tensor> split(const Tensor& x, const Shape& split_sizes, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& x, const Shape& split_sizes, int64_t dim = 0);
// At most `chunks` views of ceil(size / chunks) along `dim`.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// x.select(dim, i) for every i.
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);

// Rearranging copies (ops/rearrange.cpp), as their torch namesakes:
// - flip: the order of the elements along each of `dims` reversed;
// - roll: the elements along each of `dims` shifted by its shift, those that fall off the end
//   coming back at the front (no dims: the flattened tensor, as torch.roll);
// - repeat: the tensor tiled repeats[i] times along dim i (leading repeats add dimensions);
// - repeat_interleave: each element repeated `repeats` times in place along `dim` (the
//   flattened tensor without a dim);
// - pad: F.pad's (left, right) pairs from the last dim backwards; Constant fills with `value`
//   (negative padding crops), Reflect mirrors without repeating the edge (padding < the dim's
//   size), Replicate repeats the edge, Circular wraps around (padding <= the dim's size). As
//   PyTorch, the last three take no value and pad the last 1, 2 or 3 dims of a 2-D/3-D, 3-D/4-D
//   or 4-D/5-D input; negative padding crops in every mode. Indices for flip and the
//   non-constant pads are made on the host and copied to the tensor's device.
//   F::pad(x, F::PadFuncOptions({1, 1}).mode(kReflect)) is the same op (nn/options/padding.h).
Tensor flip(const Tensor& x, const Shape& dims);
Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims = {});
Tensor repeat(const Tensor& x, const Shape& repeats);
Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt);
enum class PadMode { Constant, Reflect, Replicate, Circular };
// "constant", "reflect", "replicate" or "circular", as F.pad's mode strings.
const char* pad_mode_name(PadMode mode);
Tensor pad(const Tensor& x, const Shape& padding, PadMode mode = PadMode::Constant,
           double value = 0.0);

// Joins tensors of equal shape except along `dim`.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins tensors of equal shape along a new dimension `dim`.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// The slices of x at `index` (1-D int64) along `dim`; backward scatters and adds.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// int64 [...] -> int64 [..., num_classes]; num_classes = -1 takes max + 1.
Tensor one_hot(const Tensor& labels, int64_t num_classes = -1);

}  // namespace minidl
