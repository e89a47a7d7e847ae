#pragma once
// Host memory aligned to 64 bytes (a cache line, and enough for any SIMD load). Blocks of 1 MiB
// and more are kept for reuse when freed (core/cpu_block_cache.h).
#include <cstddef>
#include <memory>

namespace minidl::cpu {

inline constexpr size_t kAlignment = 64;

std::shared_ptr<void> allocate(size_t nbytes);

// Bytes of freed blocks kept for reuse, and returning them all to the system (as
// torch.cuda.empty_cache does for device memory).
size_t cached_bytes();
void empty_cache();

}  // namespace minidl::cpu
