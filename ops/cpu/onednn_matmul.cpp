// float32 and bfloat16 GEMMs on oneDNN's matmul primitive (ops/cpu/onednn_matmul.h). The work is
// cut as the OpenBLAS GEMM's (ops/cpu/linalg.cpp): the matrices of the batch and blocks of rows of
// each, one primitive call per block on one of minidl's threads (Note [oneDNN on minidl's threads]
// in ops/cpu/onednn_context.h). Primitives are made once per (rows, columns, depth, operand
// strides, beta, dtype) and kept (Note [oneDNN primitive cache]); the operands are read in their
// own layout.
#include "minidl/ops/cpu/onednn_matmul.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minidl/core/ceil_div.h"
#include "minidl/core/logging.h"
#include "minidl/core/parallel.h"
#include "minidl/ops/cpu/onednn_context.h"
#include "minidl/ops/onednn.h"

namespace minidl::cpu {

namespace {

using dnnl::memory;

// As the OpenBLAS GEMM: each task at least this many multiply-adds.
constexpr int64_t kMultiplyAddsPerTask = 1 << 20;

struct MatmulKey {
  int64_t rows, cols, depth;             // one block: [rows, depth] @ [depth, cols]
  int64_t a_row_stride, a_depth_stride;  // a's strides along its rows and along k
  int64_t b_depth_stride, b_col_stride;  // b's strides along k and along its columns
  bool accumulate;                       // beta 1: c += a @ b
  bool float32;                          // the operands' dtype: float32, else bfloat16
  bool bfloat16_result;                  // c in bfloat16 (beta 0), else float32
  bool row_block;  // one of the blocks of rows that follow the thread count (onednn_gemm's)
  bool operator==(const MatmulKey&) const = default;
};

struct MatmulKeyHash {
  size_t operator()(const MatmulKey& k) const {
    size_t h = ((k.accumulate * 2 + k.float32) * 2 + k.bfloat16_result) * 2 + k.row_block;
    for (int64_t v : {k.rows, k.cols, k.depth, k.a_row_stride, k.a_depth_stride, k.b_depth_stride,
                      k.b_col_stride})
      h = h * 1000003u ^ std::hash<int64_t>{}(v);
    return h;
  }
};

struct MatmulPlan {
  dnnl::matmul primitive;
  memory::desc a, b, c;  // as the primitive reads and writes them
  size_t scratchpad_bytes = 0;
  // Note [Column-major a]: a's own layout, and the reorder that copies a block of it into the
  // row-major buffer the primitive reads (`a`), where a is copied first.
  std::optional<dnnl::reorder> a_to_rows;
  memory::desc a_given;
  size_t a_buffer_bytes() const { return a_to_rows ? a.get_size() : 0; }
};

memory::data_type operand_type(const MatmulKey& k) {
  return k.float32 ? memory::data_type::f32 : memory::data_type::bf16;
}

dnnl::matmul::primitive_desc describe(const MatmulKey& k, const memory::desc& a,
                                      const memory::desc& b, const memory::desc& c) {
  dnnl::primitive_attr attributes = onednn::user_scratchpad();
  if (k.accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attributes.set_post_ops(sum);
  }
  return {dnnl::matmul::desc(a, b, c), attributes, onednn::engine()};
}

// Note [Column-major a]: a weight gradient dW = dY^T X reads dY^T column-major. For such an a the
// oneDNN minidl links (Debian's 2.6) often has only gemm:jit, which blocks of rows may not use
// (below), so these products fell back to OpenBLAS: in bfloat16 after converting both operands
// to float32, at a quarter of oneDNN's speed (a [1536, 2048]^T @ [2048, 384] product: 10.4 ms
// against PyTorch's 2.8 ms, 2 threads, AVX-512 BF16 EPYC). Each block of a's rows is then copied
// into a row-major buffer first (a oneDNN reorder, exact), which brgemm takes: 3.0 ms.
std::shared_ptr<const MatmulPlan> make_plan(const MatmulKey& k) {
  auto plan = std::make_shared<MatmulPlan>();
  plan->a = memory::desc({k.rows, k.depth}, operand_type(k), {k.a_row_stride, k.a_depth_stride});
  plan->b = memory::desc({k.depth, k.cols}, operand_type(k), {k.b_depth_stride, k.b_col_stride});
  plan->c = memory::desc({k.rows, k.cols},
                         k.bfloat16_result ? memory::data_type::bf16 : memory::data_type::f32,
                         {k.cols, 1});
  dnnl::matmul::primitive_desc pd = describe(k, plan->a, plan->b, plan->c);
  std::string implementation = pd.impl_info_str();
  // gemm:jit's order of summation over k changes with the number of rows it is given (measured:
  // a [128, 4096] @ [4096, 192] product as one block of rows and as two differ in their last
  // bits), so it may not take blocks of rows whose height follows the thread count.
  if (k.row_block && implementation.starts_with("gemm:jit") && k.a_row_stride == 1) {
    const memory::desc rows({k.rows, k.depth}, operand_type(k), {k.depth, 1});
    const dnnl::matmul::primitive_desc rows_pd = describe(k, rows, plan->b, plan->c);
    if (std::string_view(rows_pd.impl_info_str()).starts_with("brg")) {  // Note [Column-major a]
      plan->a_given = plan->a;
      plan->a = rows;
      plan->a_to_rows.emplace(
          dnnl::reorder::primitive_desc(onednn::engine(), plan->a_given, onednn::engine(), rows));
      pd = rows_pd;
      implementation = pd.impl_info_str();
    }
  }
  // oneDNN's own kernels (brgemm, jit, and its JIT-compiled GEMM "gemm:jit" where the rows are
  // not cut by thread count), not its reference loops.
  const bool own_kernel = implementation.starts_with("brg") || implementation.starts_with("jit") ||
                          (implementation.starts_with("gemm:jit") && !k.row_block);
  if (!own_kernel) {
    logger().debug("matmul: oneDNN has only {} for {} [{}, {}] @ [{}, {}]; using OpenBLAS",
                   implementation, k.float32 ? "float32" : "bfloat16", k.rows, k.depth, k.depth,
                   k.cols);
    return nullptr;
  }
  plan->primitive = dnnl::matmul(pd);
  plan->scratchpad_bytes = pd.scratchpad_desc().get_size();
  onednn::count_primitive();
  return plan;
}

// The bytes of scratch memory run_plan needs: oneDNN's scratchpad, then a's row-major copy.
size_t scratch_bytes(const MatmulPlan& plan) {
  return plan.scratchpad_bytes + plan.a_buffer_bytes();
}

// Runs `plan` on a (in its own layout), b and c at these addresses.
void run_plan(const MatmulPlan& plan, const void* a, const void* b, void* c, std::byte* scratch) {
  const void* a_read = a;
  if (plan.a_to_rows) {
    std::byte* buffer = scratch + plan.scratchpad_bytes;
    onednn::execute_reorder(*plan.a_to_rows, onednn::wrap(plan.a_given, a),
                            onednn::wrap(plan.a, buffer), "oneDNN reorder: matrix product operand");
    a_read = buffer;
  }
  onednn::execute(plan.primitive, {{DNNL_ARG_SRC, onednn::wrap(plan.a, a_read)},
                                   {DNNL_ARG_WEIGHTS, onednn::wrap(plan.b, b)},
                                   {DNNL_ARG_DST, onednn::wrap(plan.c, c)},
                                   {DNNL_ARG_SCRATCHPAD,
                                    onednn::scratchpad_memory(scratch, plan.scratchpad_bytes)}});
}

// Note [oneDNN primitive cache]: nullptr for a key oneDNN refused.
std::shared_ptr<const MatmulPlan> plan_for(const MatmulKey& key) {
  static onednn::PlanCache<MatmulKey, MatmulPlan, MatmulKeyHash> plans("matmul");
  return plans.get(key, make_plan);
}

// Note [Products split along k]: a weight gradient dW = dY^T X sums over the batch's tokens, so
// its k (4096 in the GPT's step) dwarfs its rows and columns (128 to 512). Split into blocks of
// rows, as other products are, each block repacks all of k for a few rows; and oneDNN runs these
// shapes on gemm:jit, whose sums change with the rows it is given. So such a product is cut
// along k instead, into chunks of at least kDepthChunk, at most kMostDepthChunks of them (each
// partial product is as large as c), their number and depth given by k alone: one primitive
// call per chunk on any of minidl's threads, each into a partial product of its own, and then
// c = (beta c) + partial_0 + partial_1 + ..., in that order for every element. The same chunks and
// the same order at any thread count: the same bits.
constexpr int64_t kDepthChunk = 512;
constexpr int64_t kMostDepthChunks = 8;

bool splits_along_depth(int64_t batch, int64_t n, int64_t m, int64_t k) {
  return batch == 1 && k >= 2 * kDepthChunk && k > 2 * std::max(n, m);
}

bool gemm_in_depth_chunks(const Tensor& a, const Tensor& b, const Tensor& c, double beta) {
  const int64_t n = c.size(1), m = c.size(2), k = a.size(2);
  const int64_t chunk_depth =
      std::max(kDepthChunk, ceil_div(k, kMostDepthChunks));  // 512 for the GPT's k of 4096
  const int64_t chunks = ceil_div(k, chunk_depth), last_depth = k - (chunks - 1) * chunk_depth;
  auto key_for = [&](int64_t depth) {
    return MatmulKey{n,           m,           depth, a.stride(1),           a.stride(2),
                     b.stride(1), b.stride(2), false, a.dtype() == kFloat32, false,
                     false};
  };
  const std::shared_ptr<const MatmulPlan> chunk_plan = plan_for(key_for(chunk_depth));
  const std::shared_ptr<const MatmulPlan> last_plan =
      last_depth == chunk_depth ? chunk_plan : plan_for(key_for(last_depth));
  if (!chunk_plan || !last_plan) return false;

  const size_t bytes = std::max(scratch_bytes(*chunk_plan), scratch_bytes(*last_plan));
  const int64_t es = a.element_size();
  const auto* a_bytes = static_cast<const char*>(a.data_ptr());
  const auto* b_bytes = static_cast<const char*>(b.data_ptr());
  // Each chunk's primitive writes all of its partial product: nothing to zero first.
  const auto partials =
      std::make_unique_for_overwrite<float[]>(static_cast<size_t>(chunks * n * m));
  parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    std::vector<std::byte> scratch(bytes);
    for (int64_t chunk = first; chunk < last; ++chunk) {
      const int64_t depth = chunk * chunk_depth;
      run_plan(chunk == chunks - 1 ? *last_plan : *chunk_plan, a_bytes + es * depth * a.stride(2),
               b_bytes + es * depth * b.stride(1), partials.get() + chunk * n * m, scratch.data());
    }
  });
  auto add_partials = [&]<class Result>(Result* c_data) {
    parallel_for(0, n * m, kDefaultGrain, [&](int64_t first, int64_t last) {
      for (int64_t e = first; e < last; ++e) {
        float sum = beta == 1 ? static_cast<float>(c_data[e]) : 0.0f;
        for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partials[chunk * n * m + e];
        c_data[e] = Result(sum);  // rounded once
      }
    });
  };
  if (c.dtype() == kBFloat16)
    add_partials(static_cast<BFloat16*>(c.data_ptr()));
  else
    add_partials(static_cast<float*>(c.data_ptr()));
  return true;
}

}  // namespace

bool onednn_gemm_enabled(DType dtype) {
  if (!onednn_enabled()) return false;
  if (dtype == kBFloat16) return onednn_bfloat16_instructions();
  return dtype == kFloat32 && dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
}

bool onednn_gemm(const Tensor& a, const Tensor& b, const Tensor& c, double beta) {
  const bool bfloat16_result = c.dtype() == kBFloat16;
  MINIDL_INTERNAL_ASSERT(
      (a.dtype() == kBFloat16 || a.dtype() == kFloat32) && c.is_contiguous() &&
          (c.dtype() == kFloat32 || (bfloat16_result && a.dtype() == kBFloat16 && beta == 0)) &&
          (beta == 0 || beta == 1),
      "onednn_gemm: expected float32 or bfloat16 operands, a contiguous float32 result (or ",
      "bfloat16 for bfloat16 operands and beta 0) and beta 0 or 1, got ", a.dtype(), ", ",
      b.dtype(), ", ", c.dtype(), " and beta ", beta);
  const int64_t batch = c.size(0), n = c.size(1), m = c.size(2), k = a.size(2);
  if (splits_along_depth(batch, n, m, k)) return gemm_in_depth_chunks(a, b, c, beta);
  const int64_t multiply_adds = n * m * k;
  // Rows [block * n / row_blocks, (block + 1) * n / row_blocks) of each matrix per item: at most
  // two block heights, so at most two plans.
  const int64_t most_blocks = std::max<int64_t>(1, std::min(n, get_num_threads()));
  const int64_t row_blocks =
      std::clamp<int64_t>(multiply_adds / kMultiplyAddsPerTask, 1, most_blocks);
  auto key_for = [&](int64_t rows) {
    return MatmulKey{rows,        m,           k,         a.stride(1),           a.stride(2),
                     b.stride(1), b.stride(2), beta == 1, a.dtype() == kFloat32, bfloat16_result,
                     true};
  };
  const int64_t short_rows = n / row_blocks, tall_rows = (n + row_blocks - 1) / row_blocks;
  const std::shared_ptr<const MatmulPlan> short_plan = plan_for(key_for(short_rows));
  const std::shared_ptr<const MatmulPlan> tall_plan =
      tall_rows == short_rows ? short_plan : plan_for(key_for(tall_rows));
  if (!short_plan || !tall_plan) return false;

  const size_t bytes = std::max(scratch_bytes(*short_plan), scratch_bytes(*tall_plan));
  const int64_t es = a.element_size();
  const auto* a_bytes = static_cast<const char*>(a.data_ptr());
  const auto* b_bytes = static_cast<const char*>(b.data_ptr());
  auto* c_bytes = static_cast<char*>(c.data_ptr());
  const int64_t c_es = c.element_size();
  auto multiply = [&](int64_t first, int64_t last) {
    std::vector<std::byte> scratch(bytes);
    for (int64_t item = first; item < last; ++item) {
      const int64_t i = item / row_blocks, block = item % row_blocks;
      const int64_t row = n * block / row_blocks, rows = n * (block + 1) / row_blocks - row;
      run_plan(rows == short_rows ? *short_plan : *tall_plan,
               a_bytes + es * (i * a.stride(0) + row * a.stride(1)), b_bytes + es * i * b.stride(0),
               c_bytes + c_es * (i * n * m + row * m), scratch.data());
    }
  };
  const int64_t item_multiply_adds = std::max<int64_t>(1, multiply_adds / row_blocks);
  parallel_for(0, batch * row_blocks,
               std::max<int64_t>(1, kMultiplyAddsPerTask / item_multiply_adds), multiply);
  return true;
}

}  // namespace minidl::cpu
