// Copies that rearrange a tensor's elements: flip, roll, repeat, repeat_interleave and pad, as
// their torch namesakes. Each is composed of views, index_select and cat, which give it both
// backends and its backward.
#include <algorithm>
#include <vector>

#include "minidl/core/profiler.h"
#include "minidl/ops/shape.h"

namespace minidl {

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

namespace {

// The int64 indices size-1, ..., 1, 0 on `device` (made on the host and copied there).
Tensor reversed_indices(int64_t size, Device device) {
  std::vector<int64_t> indices(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) indices[static_cast<size_t>(i)] = size - 1 - i;
  return from_host(indices.data(), {size}, kInt64).to(device);
}

// The element of a dim of `size` that padded position `j` (counted from the first source
// element, so negative before it) copies: mirrored without repeating the edge (reflect),
// clamped to the edge (replicate) or wrapped around (circular).
int64_t padded_source_index(PadMode mode, int64_t j, int64_t size) {
  switch (mode) {
    case PadMode::Reflect:
      if (j < 0) return -j;
      return j >= size ? 2 * (size - 1) - j : j;
    case PadMode::Replicate: return std::clamp<int64_t>(j, 0, size - 1);
    case PadMode::Circular: return ((j % size) + size) % size;
    case PadMode::Constant: break;
  }
  MINIDL_INTERNAL_ASSERT(false, "pad: constant padding has no source index");
  return 0;
}

// PyTorch's limits on reflect, replicate and circular padding: the last 1, 2 or 3 dims of a
// batched or unbatched input (2-D/3-D, 3-D/4-D, 4-D/5-D), no fill value.
void check_non_constant_pad(const Tensor& x, const Shape& padding, PadMode mode, double value) {
  MINIDL_CHECK(value == 0, "pad: padding mode \"", pad_mode_name(mode),
               "\" doesn't take a value argument, got value ", value);
  const int64_t pairs = static_cast<int64_t>(padding.size() / 2);
  MINIDL_CHECK(pairs >= 1 && pairs <= 3 && (x.dim() == pairs + 1 || x.dim() == pairs + 2),
               "pad: ", pad_mode_name(mode), " padding of ", padding.size(),
               " values is not supported for a ", x.dim(), "-D input of shape ", x.sizes(),
               "; expected 2 values for a 2-D or 3-D input, 4 for 3-D or 4-D, 6 for 4-D or 5-D");
}

void check_padded_size(PadMode mode, int64_t d, int64_t size, int64_t before, int64_t after) {
  if (mode == PadMode::Reflect)
    MINIDL_CHECK(before < size && after < size, "pad: reflect padding of dimension ", d,
                 " must be less than its size ", size, ", got ", before, " and ", after);
  if (mode == PadMode::Circular) {
    MINIDL_CHECK(before <= size && after <= size, "pad: circular padding of dimension ", d,
                 " must be at most its size ", size, " (it wraps around once), got ", before,
                 " and ", after);
    MINIDL_CHECK(size + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0) > 0,
                 "pad: circular padding (", before, ", ", after, ") of dimension ", d, " of size ",
                 size, " crops every element");
  }
  MINIDL_CHECK(size > 0 && size + before + after > 0, "pad: ", pad_mode_name(mode), " padding (",
               before, ", ", after, ") of dimension ", d, " of size ", size, " leaves no elements");
}

}  // namespace

Tensor flip(const Tensor& x, const Shape& dims) {
  const ProfileScope profile("flip", {x});
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
  const ProfileScope profile("roll", {x});
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
  const ProfileScope profile("repeat", {x});
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
  const ProfileScope profile("repeat_interleave", {x});
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
  const ProfileScope profile("pad", {x});
  check_defined(x, "pad", "input");
  MINIDL_CHECK(padding.size() % 2 == 0 && padding.size() / 2 <= static_cast<size_t>(x.dim()),
               "pad: expected an even number of paddings, at most two per dimension of shape ",
               x.sizes(), ", got ", padding);
  if (mode != PadMode::Constant) check_non_constant_pad(x, padding, mode, value);
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
    check_padded_size(mode, d, size, before, after);
    std::vector<int64_t> indices;
    if (mode == PadMode::Circular) {
      // As PyTorch's: negative padding crops first, and the rest wraps around what is left.
      const int64_t start = std::max<int64_t>(0, -before);
      const int64_t kept = size - start - std::max<int64_t>(0, -after);
      const int64_t lead = std::max<int64_t>(0, before);
      for (int64_t i = 0; i < size + before + after; ++i)
        indices.push_back(start + padded_source_index(mode, i - lead, kept));
    } else {
      // Output element i along d reads source element i - before, brought back into
      // [0, size) by the mode's rule (negative padding crops).
      for (int64_t i = 0; i < size + before + after; ++i)
        indices.push_back(padded_source_index(mode, i - before, size));
    }
    out = index_select(
        out, d,
        from_host(indices.data(), {static_cast<int64_t>(indices.size())}, kInt64).to(x.device()));
  }
  return out.is_same(x) ? x.clone() : out;
}

}  // namespace minidl
