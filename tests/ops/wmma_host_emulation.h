#pragma once
// Just enough of CUDA to run ops/cuda/attention_tensor_cores_kernels.cuh on the host, so that
// the CPU tests exercise the kernels' own indexing, masking, tiling and synchronisation:
// - a block is one std::thread per CUDA thread; __syncthreads and __syncwarp are barriers, and
//   __shfl_xor_sync goes through memory between two warp barriers;
// - a WMMA fragment holds its whole 16 x 16 matrix (row-major, in float), in lane 0 only:
//   loads, products and stores happen in lane 0, so a lane that reads what a store wrote before
//   the warp synchronised reads stale memory, as on a GPU. The matrix-layout rules are the CUDA
//   Programming Guide's (matrix_a row-major: element (r, c) at p[r * ldm + c]; col-major: at
//   p[c * ldm + r]; matrix_b alike over (k, n)); the pointer and ldm rules that the hardware
//   enforces (256-bit aligned pointers, ldm a multiple of 16 bytes) are counted in
//   wmma_rule_breaks;
// - shared memory is one static array per test program (blocks run one after another),
//   poisoned with 0xff bytes (NaN in every float type) before each block, so reading what no
//   thread wrote shows.
// Include it after every other header and before the kernels: its macros empty CUDA's keywords.
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "minidl/core/half.h"

#define MINIDL_WMMA_HOST_EMULATION 1
#define __global__
#define __device__
#define __shared__
#define __align__(bytes)
#define __launch_bounds__(threads)

// Everything but WMMA lives in the kernels' own namespace, in an inline namespace of its own
// (which ops/cuda/attention_tensor_cores_kernels.cuh opens around the kernels under
// MINIDL_WMMA_HOST_EMULATION): the emulated kernels then have other symbol names than the CUDA
// build's, and a test program that links both cannot mix them up.
namespace minidl::cuda {
inline constexpr int kWarpSize = 32;
namespace attention_tensor_cores {
inline namespace host_emulation {

struct Index {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Index threadIdx, blockIdx;
inline Index gridDim;

struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
using __half = Half;
using __nv_bfloat16 = BFloat16;

template <class A>
A min(A a, A b) {
  return b < a ? b : a;
}
template <class A>
A max(A a, A b) {
  return a < b ? b : a;
}

// The barriers and the shuffle slots of the running block.
struct Block {
  std::unique_ptr<std::barrier<>> all;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> shuffle_slots;
};

inline Block* running_block = nullptr;
inline std::atomic<int> wmma_rule_breaks{0};

constexpr size_t kSharedBytes = 227 * 1024;  // sm_90's most per block
// The kernels' `extern __shared__` array.
alignas(128) inline unsigned char tensor_core_shared[kSharedBytes];

inline void __syncthreads() { running_block->all->arrive_and_wait(); }
inline void __syncwarp() { running_block->warps[threadIdx.x / 32]->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned /*mask*/, float value, int lane_mask) {
  std::vector<float>& slots = running_block->shuffle_slots;
  const unsigned warp_base = threadIdx.x / 32 * 32;
  slots[threadIdx.x] = value;
  __syncwarp();
  const float other = slots[warp_base + ((threadIdx.x % 32) ^ static_cast<unsigned>(lane_mask))];
  __syncwarp();
  return other;
}

inline bool lane_zero() { return threadIdx.x % 32 == 0; }

}  // namespace host_emulation
}  // namespace attention_tensor_cores
}  // namespace minidl::cuda

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class Element, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the kernels use 16 x 16 x 16 only");
  float elements[256];  // row-major; meaningful in lane 0
};

using minidl::cuda::attention_tensor_cores::lane_zero;

template <class Element>
void check_rules(const void* pointer, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(pointer) % 32 != 0 || ldm * sizeof(Element) % 16 != 0)
    ++minidl::cuda::attention_tensor_cores::wmma_rule_breaks;
}

template <class Use, class Element, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, Element, Layout>& f, const Element* p,
                      unsigned ldm) {
  if (!lane_zero()) return;
  check_rules<Element>(p, ldm);
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      f.elements[r * 16 + c] =
          static_cast<float>(std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p,
                             unsigned ldm, layout_t layout) {
  if (!lane_zero()) return;
  check_rules<float>(p, ldm);
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      f.elements[r * 16 + c] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f,
                              unsigned ldm, layout_t layout) {
  if (!lane_zero()) return;
  check_rules<float>(p, ldm);
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c)
      (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.elements[r * 16 + c];
}

inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float value) {
  for (float& e : f.elements) e = value;
}

// d = a b + c, products and sums in float (the 16-bit products are exact in float).
template <class Element, class LayoutA, class LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d,
              const fragment<matrix_a, 16, 16, 16, Element, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, Element, LayoutB>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  if (!lane_zero()) return;
  float result[256];
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float sum = c.elements[r * 16 + n];
      for (int k = 0; k < 16; ++k) sum += a.elements[r * 16 + k] * b.elements[k * 16 + n];
      result[r * 16 + n] = sum;
    }
  std::memcpy(d.elements, result, sizeof result);
}

}  // namespace nvcuda::wmma

namespace minidl::cuda::attention_tensor_cores::host_emulation {

// Runs kernel() on every block of grid (x, y), threads_per_block threads each, one block after
// another, with shared memory (shared_bytes of it, at most kSharedBytes) poisoned first.
inline void launch(unsigned grid_x, unsigned grid_y, unsigned threads_per_block,
                   size_t shared_bytes, const std::function<void()>& kernel) {
  unsigned char* shared = tensor_core_shared;
  if (shared_bytes > kSharedBytes) {
    ++wmma_rule_breaks;
    return;
  }
  gridDim = {grid_x, grid_y, 1};
  for (unsigned y = 0; y < grid_y; ++y)
    for (unsigned x = 0; x < grid_x; ++x) {
      std::memset(shared, 0xff, kSharedBytes);
      Block block;
      block.all = std::make_unique<std::barrier<>>(threads_per_block);
      for (unsigned w = 0; w < threads_per_block / 32; ++w)
        block.warps.push_back(std::make_unique<std::barrier<>>(32));
      block.shuffle_slots.assign(threads_per_block, 0.0f);
      running_block = &block;
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < threads_per_block; ++t)
        threads.emplace_back([&, t] {
          threadIdx = {t, 0, 0};
          blockIdx = {x, y, 0};
          kernel();
        });
      for (std::thread& thread : threads) thread.join();
      running_block = nullptr;
    }
}

}  // namespace minidl::cuda::attention_tensor_cores::host_emulation
