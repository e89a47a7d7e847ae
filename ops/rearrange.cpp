// Copies that rearrange a tensor's elements: flip, roll, repeat, repeat_interleave and pad, as
// their torch namesakes. Each is composed of views, index_select and cat, which give it both
// backends and its backward.
#include <vector>

#include "minidl/ops/shape.h"

namespace minidl {

namespace {

// The int64 indices size-1, ..., 1, 0 on `device` (made on the host and copied there).
Tensor reversed_indices(int64_t size, Device device) {
  std::vector<int64_t> indices(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) indices[static_cast<size_t>(i)] = size - 1 - i;
  return from_host(indices.data(), {size}, kInt64).to(device);
}

}  // namespace

Tensor flip(const Tensor& x, const Shape& dims) {
  check_defined(x, "flip", "input");
  std::vector<bool> seen(static_cast<size_t>(x.dim()), false);
  Tensor out = x;
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, x.dim(), "flip");
    MINIDL_CHECK(!seen[static_cast<size_t>(d)], "flip: dim ", dim, " appears more than once in ",
                 dims);
    seen[static_cast<size_t>(d)] = true;
    out = index_select(out, d, reversed_indices(x.size(d), x.device()));
  }
  return dims.empty() ? x.clone() : out;
}

Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims) {
  check_defined(x, "roll", "input");
  MINIDL_CHECK(shifts.size() == dims.size() || (dims.empty() && shifts.size() == 1),
               "roll: expected as many shifts as dims, got shifts ", shifts, " and dims ", dims);
  if (dims.empty())  // rolls the flattened tensor, as torch.roll without dims
    return roll(x.flatten(), shifts, {0}).view(x.sizes());
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], x.dim(), "roll");
    const int64_t size = x.size(d);
    if (size == 0) continue;
    const int64_t shift = ((shifts[i] % size) + size) % size;
    if (shift == 0) continue;
    // The last `shift` elements move to the front.
    out = cat({out.narrow(d, size - shift, shift), out.narrow(d, 0, size - shift)}, d);
  }
  return out.defined() && out.is_same(x) ? x.clone() : out;
}

Tensor repeat(const Tensor& x, const Shape& repeats) {
  check_defined(x, "repeat", "input");
  MINIDL_CHECK(repeats.size() >= static_cast<size_t>(x.dim()), "repeat: expected at least ",
               x.dim(), " repeats for a tensor of shape ", x.sizes(), ", got ", repeats);
  for (int64_t r : repeats)
    MINIDL_CHECK(r >= 0, "repeat: expected non-negative repeats, got ", repeats);
  // x [a, b] with repeats [r, s]: view [1, a, 1, b], expand to [r, a, s, b], then [r a, s b].
  const size_t lead = repeats.size() - static_cast<size_t>(x.dim());
  Shape interleaved, expanded, result;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t size = i < lead ? 1 : x.size(static_cast<int64_t>(i - lead));
    interleaved.insert(interleaved.end(), {1, size});
    expanded.insert(expanded.end(), {repeats[i], size});
    result.push_back(repeats[i] * size);
  }
  return x.reshape(interleaved).expand(expanded).reshape(result);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  check_defined(x, "repeat_interleave", "input");
  MINIDL_CHECK(repeats >= 0, "repeat_interleave: expected repeats >= 0, got ", repeats);
  if (!dim) return repeat_interleave(x.flatten(), repeats, 0);
  const int64_t d = wrap_dim(*dim, x.dim(), "repeat_interleave");
  // Each element along d followed by its copies: [..., n, 1, ...] expanded to [..., n, r, ...].
  Shape expanded = x.sizes();
  expanded.insert(expanded.begin() + d + 1, repeats);
  Shape result = x.sizes();
  result[static_cast<size_t>(d)] *= repeats;
  return x.unsqueeze(d + 1).expand(expanded).reshape(result);
}

Tensor pad(const Tensor& x, const Shape& padding, PadMode mode, double value) {
  check_defined(x, "pad", "input");
  MINIDL_CHECK(padding.size() % 2 == 0 && padding.size() / 2 <= static_cast<size_t>(x.dim()),
               "pad: expected an even number of paddings, at most two per dimension of shape ",
               x.sizes(), ", got ", padding);
  Tensor out = x;
  // padding = (left of the last dim, right of it, left of the one before, ...), as F.pad.
  for (size_t pair = 0; pair < padding.size() / 2; ++pair) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(pair);
    const int64_t before = padding[2 * pair], after = padding[2 * pair + 1];
    const int64_t size = out.size(d);
    if (mode == PadMode::Constant) {
      MINIDL_CHECK(before >= -size && after >= -size && before + after >= -size, "pad: padding ",
                   padding, " removes more than dimension ", d, "'s ", size, " elements");
      // Negative padding crops, as F.pad's.
      out = out.narrow(d, std::max<int64_t>(0, -before),
                       size + std::min<int64_t>(0, before) + std::min<int64_t>(0, after));
      std::vector<Tensor> parts;
      Shape sizes = out.sizes();
      if (before > 0) {
        sizes[static_cast<size_t>(d)] = before;
        parts.push_back(full(sizes, value, out.options()));
      }
      parts.push_back(out);
      if (after > 0) {
        sizes[static_cast<size_t>(d)] = after;
        parts.push_back(full(sizes, value, out.options()));
      }
      out = parts.size() == 1 ? out : cat(parts, d);
      continue;
    }
    MINIDL_CHECK(before >= 0 && after >= 0 && before < size && after < size, "pad: reflect ",
                 "padding of dimension ", d, " must be in [0, ", size, "), got ", before, " and ",
                 after);
    // Reflection without the edge: x[before], ..., x[1], x, x[size - 2], ..., x[size - 1 - after].
    std::vector<int64_t> indices;
    for (int64_t i = before; i >= 1; --i) indices.push_back(i);
    for (int64_t i = 0; i < size; ++i) indices.push_back(i);
    for (int64_t i = size - 2; i >= size - 1 - after; --i) indices.push_back(i);
    out = index_select(
        out, d,
        from_host(indices.data(), {static_cast<int64_t>(indices.size())}, kInt64).to(x.device()));
  }
  return out.is_same(x) ? x.clone() : out;
}

}  // namespace minidl
