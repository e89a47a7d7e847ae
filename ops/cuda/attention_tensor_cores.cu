// The launchers of the tensor-core attention kernels (ops/cuda/attention_tensor_cores_kernels.cuh,
// where their conventions are) and the entry points of ops/cuda/attention_tensor_cores.h. Every
// launch is on the current stream, followed by a launch check; nothing synchronises the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "minidl/core/ceil_div.h"
#include "minidl/core/cuda/check.h"
#include "minidl/core/cuda/launch.cuh"
#include "minidl/ops/cuda/attention_tensor_cores.h"
#include "minidl/ops/cuda/attention_tensor_cores_kernels.cuh"

namespace minidl::cuda {

namespace {

using namespace attention_tensor_cores;  // NOLINT(google-build-using-namespace): their launchers

constexpr size_t kDefaultSharedBytes = 48 * 1024;

// ---- launchers ----

// Compute capability major of each device, asked once (WMMA on bfloat16 needs 8.0).
int compute_capability_major(int device) {
  static const std::vector<int> majors = [] {
    int device_count = 0;
    MINIDL_CUDA_CHECK(cudaGetDeviceCount(&device_count));
    std::vector<int> result(static_cast<size_t>(device_count));
    for (int d = 0; d < device_count; ++d)
      MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&result[static_cast<size_t>(d)],
                                               cudaDevAttrComputeCapabilityMajor, d));
    return result;
  }();
  MINIDL_INTERNAL_ASSERT(device >= 0 && device < static_cast<int>(majors.size()), "no CUDA device ",
                         device);
  return majors[static_cast<size_t>(device)];
}

// Raises a kernel's dynamic shared memory limit past the default 48 KiB where it needs more:
// the largest (backward, D = Dv = 128) takes about 123 KiB, within sm_80's 163 KiB and
// sm_90's 227 KiB.
template <class Kernel>
void allow_shared_bytes(Kernel kernel, size_t bytes) {
  if (bytes > kDefaultSharedBytes)
    MINIDL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
}

// fn(Half{}) or fn(BFloat16{}).
template <class Fn>
void visit_16_bit(DType dtype, Fn&& fn) {
  if (dtype == kFloat16)
    fn(Half{});
  else
    fn(BFloat16{});
}

// fn(std::integral_constant<int, tiles>) with tiles = 4 for head dims up to 64, else 8: the
// gradient kernels' accumulator arrays are sized at compile time.
template <class Fn>
void visit_dim_tiles(const AttentionParams& params, Fn&& fn) {
  if (std::max(params.head_dim, params.value_dim) <= 64)
    fn(std::integral_constant<int, 4>{});
  else
    fn(std::integral_constant<int, kMaxDim / kFragment>{});
}

void check_fits(const AttentionParams& params, std::initializer_list<const Tensor*> operands) {
  MINIDL_CHECK(tensor_core_attention_fits(params, operands),
               "scaled_dot_product_attention: the tensor-core kernels expected float16 or "
               "bfloat16 on a device of compute capability 8.0 or later, dropout_p 0, D and Dv "
               "multiples of 16 up to 128, T and S not 0 and 16-byte aligned tensors; got ",
               operands.begin()[0]->dtype(), ", dropout_p ", params.dropout_p,
               ", D = ", params.head_dim, ", Dv = ", params.value_dim,
               ", T = ", params.query_length, ", S = ", params.key_length);
}

}  // namespace

bool tensor_core_attention_fits(const AttentionParams& params,
                                std::initializer_list<const Tensor*> operands) {
  const Tensor& first = *operands.begin()[0];
  const auto dim_fits = [](int64_t dim) {
    return dim > 0 && dim <= kMaxDim && dim % kFragment == 0;
  };
  if (first.dtype() != kFloat16 && first.dtype() != kBFloat16) return false;
  if (params.dropout_p != 0.0 || !dim_fits(params.head_dim) || !dim_fits(params.value_dim))
    return false;
  if (params.query_length == 0 || params.key_length == 0) return false;
  const int64_t heads_total = params.batch * params.heads;
  if (heads_total <= 0 || heads_total > 65535) return false;
  for (const Tensor* operand : operands)
    if (reinterpret_cast<uintptr_t>(operand->data_ptr()) % sizeof(uint4) != 0) return false;
  return compute_capability_major(first.device().index) >= 8;
}

void attention_forward_tensor_cores(const Tensor& out, const Tensor& logsumexp, const Tensor& query,
                                    const Tensor& key, const Tensor& value, const Tensor& mask,
                                    const AttentionParams& params) {
  check_fits(params, {&query, &key, &value, &out});
  LaunchContext context(query);
  const int D = static_cast<int>(params.head_dim), Dv = static_cast<int>(params.value_dim);
  const dim3 grid(static_cast<unsigned>(ceil_div(params.query_length, int64_t{kQueries})),
                  static_cast<unsigned>(params.batch * params.heads));
  const size_t shared_bytes = ForwardShared(D, Dv).bytes;
  visit_16_bit(query.dtype(), [&](auto zero) {
    using T = decltype(zero);
    allow_shared_bytes(attention_forward_tensor_core_kernel<T>, shared_bytes);
    attention_forward_tensor_core_kernel<T><<<grid, kThreads, shared_bytes, context.stream>>>(
        tile_problem<T>(params, query, key, value, mask), out.data_ptr<T>(),
        logsumexp.data_ptr<Acc>());
    MINIDL_LAUNCH_CHECK();
  });
}

void attention_backward_tensor_cores(const Tensor& grad_query, const Tensor& grad_key,
                                     const Tensor& grad_value, const Tensor& grad_out,
                                     const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& out, const Tensor& logsumexp, const Tensor& mask,
                                     const AttentionParams& params) {
  check_fits(params, {&query, &key, &value, &out, &grad_out, &grad_query, &grad_key, &grad_value});
  LaunchContext context(query);
  const int D = static_cast<int>(params.head_dim), Dv = static_cast<int>(params.value_dim);
  const int64_t heads_total = params.batch * params.heads;
  const int64_t rows = heads_total * params.query_length;
  Tensor delta = empty({rows}, query.options().dtype(kFloat32));
  const size_t shared_bytes = BackwardShared(D, Dv).bytes;
  visit_16_bit(query.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const TileProblem<T> problem = tile_problem<T>(params, query, key, value, mask);
    const unsigned delta_blocks = resident_grid_stride_blocks(rows, kWarps, 8, context.device);
    attention_delta_tensor_core_kernel<T><<<delta_blocks, kThreads, 0, context.stream>>>(
        grad_out.data_ptr<T>(), out.data_ptr<T>(), delta.data_ptr<Acc>(), rows, Dv);
    MINIDL_LAUNCH_CHECK();
    visit_dim_tiles(params, [&](auto dim_tiles) {
      constexpr int kDimTiles = decltype(dim_tiles)::value;
      const dim3 key_grid(static_cast<unsigned>(ceil_div(params.key_length, int64_t{kKeys})),
                          static_cast<unsigned>(heads_total));
      allow_shared_bytes(attention_key_value_gradient_tensor_core_kernel<T, kDimTiles>,
                         shared_bytes);
      attention_key_value_gradient_tensor_core_kernel<T, kDimTiles>
          <<<key_grid, kThreads, shared_bytes, context.stream>>>(
              problem, grad_out.data_ptr<T>(), logsumexp.data_ptr<Acc>(), delta.data_ptr<Acc>(),
              grad_key.data_ptr<T>(), grad_value.data_ptr<T>());
      MINIDL_LAUNCH_CHECK();
      const dim3 query_grid(static_cast<unsigned>(ceil_div(params.query_length, int64_t{kQueries})),
                            static_cast<unsigned>(heads_total));
      allow_shared_bytes(attention_query_gradient_tensor_core_kernel<T, kDimTiles>, shared_bytes);
      attention_query_gradient_tensor_core_kernel<T, kDimTiles>
          <<<query_grid, kThreads, shared_bytes, context.stream>>>(
              problem, grad_out.data_ptr<T>(), logsumexp.data_ptr<Acc>(), delta.data_ptr<Acc>(),
              grad_query.data_ptr<T>());
      MINIDL_LAUNCH_CHECK();
    });
  });
}

}  // namespace minidl::cuda
