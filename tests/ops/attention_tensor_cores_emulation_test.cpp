// The tensor-core attention kernels' own code (ops/cuda/attention_tensor_cores_kernels.cuh) run
// on the CPU, with WMMA, shuffles and thread blocks emulated (tests/ops/wmma_host_emulation.h),
// against the CPU kernels: the cases and tolerances of the GPU test
// (tests/ops/attention_tensor_cores_cuda_test.cpp), every output element written, no WMMA
// pointer or stride rule broken, and shared memory within what the launches ask for. It checks
// the kernels' indexing, tiling, masking and synchronisation without a GPU; what only a GPU can
// show (the hardware's fragments, timing, races between lanes that the emulation serialises)
// is the GPU test's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "attention_tensor_cores_cases.h"
#include "minidl/core/ceil_div.h"
#include "minidl/ops/attention_kernels.h"
#include "test_util.h"
// After every other header: its macros empty CUDA's keywords for the kernels.
#include "wmma_host_emulation.h"
// The kernels, compiled for the host.
#include "minidl/ops/cuda/attention_tensor_cores_kernels.cuh"

namespace minidl {
namespace {

using cuda::attention_tensor_cores::attention_delta_tensor_core_kernel;
using cuda::attention_tensor_cores::attention_forward_tensor_core_kernel;
using cuda::attention_tensor_cores::attention_key_value_gradient_tensor_core_kernel;
using cuda::attention_tensor_cores::attention_query_gradient_tensor_core_kernel;
using cuda::attention_tensor_cores::BackwardShared;
using cuda::attention_tensor_cores::ForwardShared;
using cuda::attention_tensor_cores::kKeys;
using cuda::attention_tensor_cores::kQueries;
using cuda::attention_tensor_cores::kThreads;
using cuda::attention_tensor_cores::launch;
using cuda::attention_tensor_cores::tile_problem;
using cuda::attention_tensor_cores::wmma_rule_breaks;
using testing::expect_matches;
using testing::make_problem;
using testing::Outputs;
using testing::Problem;
using testing::run_cpu;
using testing::TensorCoreCase;

// NaN everywhere: an element no kernel writes fails the comparison.
Tensor unwritten(const Shape& sizes, DType dtype) {
  return full(sizes, std::numeric_limits<double>::quiet_NaN(), TensorOptions(dtype));
}

// The launches of ops/cuda/attention_tensor_cores.cu, on the emulation.
template <class T>
Outputs run_emulated(const Problem& p) {
  const AttentionParams& params = p.params;
  const DType dtype = p.query.dtype();
  const int D = static_cast<int>(params.head_dim), Dv = static_cast<int>(params.value_dim);
  const auto heads_total = static_cast<unsigned>(params.batch * params.heads);
  const auto query_tiles = static_cast<unsigned>(ceil_div(params.query_length, int64_t{kQueries}));
  const auto key_tiles = static_cast<unsigned>(ceil_div(params.key_length, int64_t{kKeys}));
  const auto problem = tile_problem<T>(params, p.query, p.key, p.value, p.mask);
  Outputs result{
      unwritten({params.batch, params.heads, params.query_length, params.value_dim}, dtype),
      unwritten({params.batch, params.heads, params.query_length}, kFloat32),
      unwritten(p.query.sizes(), dtype), unwritten(p.key.sizes(), dtype),
      unwritten(p.value.sizes(), dtype)};
  launch(query_tiles, heads_total, kThreads, ForwardShared(D, Dv).bytes, [&] {
    attention_forward_tensor_core_kernel<T>(problem, result.out.data_ptr<T>(),
                                            result.logsumexp.data_ptr<float>());
  });
  const int64_t rows = params.batch * params.heads * params.query_length;
  Tensor delta = unwritten({rows}, kFloat32);
  launch(3, 1, kThreads, 0, [&] {
    attention_delta_tensor_core_kernel<T>(p.grad_out.data_ptr<T>(), result.out.data_ptr<T>(),
                                          delta.data_ptr<float>(), rows, Dv);
  });
  const size_t backward_bytes = BackwardShared(D, Dv).bytes;
  auto gradients = [&](auto dim_tiles) {
    constexpr int kDimTiles = decltype(dim_tiles)::value;
    launch(key_tiles, heads_total, kThreads, backward_bytes, [&] {
      attention_key_value_gradient_tensor_core_kernel<T, kDimTiles>(
          problem, p.grad_out.data_ptr<T>(), result.logsumexp.data_ptr<float>(),
          delta.data_ptr<float>(), result.grad_key.data_ptr<T>(), result.grad_value.data_ptr<T>());
    });
    launch(query_tiles, heads_total, kThreads, backward_bytes, [&] {
      attention_query_gradient_tensor_core_kernel<T, kDimTiles>(
          problem, p.grad_out.data_ptr<T>(), result.logsumexp.data_ptr<float>(),
          delta.data_ptr<float>(), result.grad_query.data_ptr<T>());
    });
  };
  if (std::max(D, Dv) <= 64)
    gradients(std::integral_constant<int, 4>{});
  else
    gradients(std::integral_constant<int, 8>{});
  return result;
}

class AttentionTensorCoresEmulated : public ::testing::TestWithParam<TensorCoreCase> {};

TEST_P(AttentionTensorCoresEmulated, MatchesTheCpu) {
  const TensorCoreCase& c = GetParam();
  for (DType dtype : {kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Problem problem = make_problem(c, dtype);
    const Outputs cpu = run_cpu(problem);
    wmma_rule_breaks = 0;
    const Outputs emulated =
        dtype == kFloat16 ? run_emulated<Half>(problem) : run_emulated<BFloat16>(problem);
    EXPECT_EQ(wmma_rule_breaks.load(), 0)
        << "WMMA pointers 32-byte aligned, ldm a multiple of 16 bytes, shared memory within "
           "the limit";
    expect_matches(emulated, cpu, dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionTensorCoresEmulated,
                         ::testing::ValuesIn(testing::tensor_core_cases()),
                         [](const ::testing::TestParamInfo<TensorCoreCase>& info) {
                           return info.param.name;
                         });

TEST(AttentionTensorCoresEmulation, TheLargestTilesFitInSharedMemory) {
  // D = Dv = 128, the most the kernels take: within sm_80's 163 KiB per block.
  EXPECT_LE(ForwardShared(128, 128).bytes, 163u * 1024);
  EXPECT_LE(BackwardShared(128, 128).bytes, 163u * 1024);
}

}  // namespace
}  // namespace minidl
