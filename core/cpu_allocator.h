#pragma once
// Host memory aligned to 64 bytes (a cache line, and enough for any SIMD load).
#include <cstddef>
#include <memory>

namespace minidl::cpu {

inline constexpr size_t kAlignment = 64;

std::shared_ptr<void> allocate(size_t nbytes);

}  // namespace minidl::cpu
