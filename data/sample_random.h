#pragma once
// Randomness in data/: every random choice is a pure function of a seed and of what it is for.
// Everything here is MINIDL_HOST_DEVICE: the per-sample transforms, the CPU batch operations and
// the CUDA kernels call the same functions, which is why their results agree exactly.
//
// Note [Randomness of samples]
//   A draw for sample `index` runs Philox-4x32-10 (core/philox.h) once on the 128-bit counter
//   {lo32(index), hi32(index), stream, purpose} with key {lo32(seed), hi32(seed)}, and takes its
//   bits from the four words that come out. `purpose` names what the draw decides (a crop
//   offset, a flip, a shuffle swap, a synthetic pixel), so decisions made with one seed are
//   independent of each other; `stream` is the epoch (its low 32 bits) for augmentations and
//   shuffles, or a chunk number where one index needs many words. So the crop of sample i in
//   epoch e depends on (seed, e, i) only: not on the worker thread that ran it, the batch it
//   fell in, the number of workers, or the device.
#include <cstdint>

#include "minidl/core/macros.h"
#include "minidl/core/philox.h"

namespace minidl::data {

// What a draw decides (the fourth counter word). Four ASCII letters, so the values are
// distinct and recognisable.
enum class DrawPurpose : uint32_t {
  CropOffset = 0x43524F50u,          // "CROP"
  HorizontalFlip = 0x464C4950u,      // "FLIP"
  Shuffle = 0x53485546u,             // "SHUF"
  SyntheticLabel = 0x4C41424Cu,      // "LABL"
  SyntheticPixels = 0x50495853u,     // "PIXS"
  SyntheticPrototype = 0x50524F54u,  // "PROT"
  TokenWindow = 0x544F4B57u          // "TOKW"
};

MINIDL_HOST_DEVICE philox::Block sample_random_words(uint64_t seed, uint64_t index, uint64_t stream,
                                                     DrawPurpose purpose) {
  const philox::Block counter{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                              static_cast<uint32_t>(stream), static_cast<uint32_t>(purpose)};
  const philox::Key key{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return philox::philox4x32_10(counter, key);
}

// A value in [0, bound) from one 32-bit word, by multiply-and-shift (Lemire's method without
// the rejection step). Its bias is below bound / 2^32, invisible for the small bounds it is
// used for here (crop offsets, class labels); shuffles and token windows use uniform_below_64.
MINIDL_HOST_DEVICE uint32_t uniform_below(uint32_t word, uint32_t bound) {
  return static_cast<uint32_t>((static_cast<uint64_t>(word) * bound) >> 32);
}

// A value in [0, bound) from 64 random bits, by multiply-and-shift: its bias, below
// bound / 2^64, is far out of reach of any dataset size (shuffles, token window starts).
MINIDL_HOST_DEVICE uint64_t uniform_below_64(uint64_t bits, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * bound) >> 64);
}

// A float in [0, 1) with 24 random bits.
MINIDL_HOST_DEVICE float unit_float(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

}  // namespace minidl::data
