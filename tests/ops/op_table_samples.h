#pragma once
// The operator table's sample-input rows (PyTorch's OpInfo "sample inputs"): any op over a list
// of tensors, one row per op and variant, beside the element-wise rows of op_table.h. A row is
// the op as a call over its inputs and the error cases that must name it; its samples (shapes,
// values, which inputs are differentiable) and PyTorch's outputs in each dtype and float64
// gradients are in tests/ops/op_sample_reference.h, written by
// tools/reference/make_op_reference.py from the same row names. Tests: op_table_samples_test.cpp
// (CPU) and op_table_samples_cuda_test.cpp (CPU/CUDA parity).
#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "minidl/minidl.h"
#include "op_sample_reference.h"

namespace minidl::testing {

using SampleInputs = std::vector<Tensor>;
using SampleOutputTensors = std::vector<Tensor>;

// A call that must throw a minidl::Error whose message contains `message` (which starts with the
// op's name).
struct SampleErrorCase {
  std::function<void()> call;
  std::string message;
};

struct SampleRow {
  std::string name;
  std::function<SampleOutputTensors(const SampleInputs&)> op;
  std::vector<SampleErrorCase> errors;
  // Multiplies the dtype's tolerance against PyTorch, for ops that round many times in a
  // different order than PyTorch's (long sums, matmul in 16-bit types).
  double tolerance_scale = 1;
};

inline void PrintTo(const SampleRow& row, std::ostream* out) { *out << row.name; }

inline SampleOutputTensors both(const std::tuple<Tensor, Tensor>& pair) {
  return {std::get<0>(pair), std::get<1>(pair)};
}

// The samples of the row called `name`, in the script's order.
inline std::vector<const SampleReference*> sample_references(const std::string& name) {
  std::vector<const SampleReference*> found;
  for (const SampleReference& reference : sample_references())
    if (name == reference.name) found.push_back(&reference);
  return found;
}

// The weight of element i of output k in the loss sum_k sum(out_k * weight) whose gradients
// the reference holds (upstream_weights in the script).
inline Tensor sample_weights(int64_t count, int64_t k) {
  std::vector<double> weights;
  for (int64_t i = 0; i < count; ++i)
    weights.push_back(0.5 + static_cast<double>((7 * i + 3 * k) % 11) / 11.0);
  return from_host(weights.data(), {count}, kFloat64);
}

// clang-format off
#define MINIDL_SAMPLE_OP(...) [](const SampleInputs& t) -> SampleOutputTensors { return __VA_ARGS__; }
inline const std::vector<SampleRow>& sample_rows() {
  static const Tensor m = zeros({2, 3});
  static const Tensor ints = zeros({2, 3}, kInt64);
  static const Tensor index = zeros({2, 2}, kInt64);
  static const std::vector<SampleRow> rows = {
      {"sum", MINIDL_SAMPLE_OP({sum(t[0])}), {{[] { sum(zeros({2, 3}, kBool).to(kBool), Shape{2}); }, "sum: "}}},
      {"sum_dims", MINIDL_SAMPLE_OP({sum(t[0], Shape{0, -1})}),
       {{[] { sum(m, Shape{0, 2}); }, "sum: "}, {[] { sum(m, Shape{1, -1}); }, "sum: dim 1 appears more than once"}}},
      {"sum_keepdim", MINIDL_SAMPLE_OP({sum(t[0], Shape{1}, true)}), {{[] { sum(m, Shape{-3}, true); }, "sum: "}}},
      {"mean", MINIDL_SAMPLE_OP({mean(t[0])}), {{[] { mean(ints); }, "mean: "}}},
      {"mean_dims", MINIDL_SAMPLE_OP({mean(t[0], Shape{-2}, true)}),
       {{[] { mean(m, Shape{2}); }, "mean: "}, {[] { mean(ints, Shape{0}); }, "mean: "}}},
      {"prod", MINIDL_SAMPLE_OP({prod(t[0])}), {{[] { prod(m, -3); }, "prod: dimension out of range"}}},
      {"prod_dim", MINIDL_SAMPLE_OP({prod(t[0], -1, true)}), {{[] { prod(m, 2); }, "prod: "}}},
      {"amax", MINIDL_SAMPLE_OP({amax(t[0], Shape{0, 2})}), {{[] { amax(m, Shape{3}); }, "amax: "}}},
      {"amin", MINIDL_SAMPLE_OP({amin(t[0], Shape{-1}, true)}),
       {{[] { amin(m, Shape{-3}); }, "amin: "}, {[] { amin(zeros({0, 3}), Shape{0}); }, "amin: "}}},
      {"max_dim", MINIDL_SAMPLE_OP(both(max(t[0], 1))), {{[] { max(m, 2); }, "max: "}}},
      {"min_dim", MINIDL_SAMPLE_OP(both(min(t[0], -1, true))),
       {{[] { min(m, -3); }, "min: "}, {[] { min(zeros({2, 0}), 1); }, "min: "}}},
      {"var", MINIDL_SAMPLE_OP({var(t[0])}), {{[] { var(ints); }, "var: "}}},
      {"var_correction0", MINIDL_SAMPLE_OP({var(t[0], Shape{0, -1}, 0)}), {{[] { var(m, Shape{2}, 0); }, "var: "}}},
      {"std", MINIDL_SAMPLE_OP({minidl::std(t[0], Shape{1}, 1, true)}), {{[] { minidl::std(ints); }, "std: expected a floating-point tensor"}}},
      {"std_correction0", MINIDL_SAMPLE_OP({minidl::std(t[0], Shape{-1}, 0)}),
       {{[] { minidl::std(m, Shape{-3}, 0); }, "std: dimension out of range"}}},
      {"logsumexp", MINIDL_SAMPLE_OP({logsumexp(t[0], Shape{1})}),
       {{[] { logsumexp(m, Shape{2}); }, "logsumexp: "}}},
      {"logsumexp_keepdim", MINIDL_SAMPLE_OP({logsumexp(t[0], Shape{0, -1}, true)}),
       {{[] { logsumexp(ints, Shape{0}); }, "logsumexp: "}}},
      {"norm_1", MINIDL_SAMPLE_OP({norm(t[0], 1, Shape{-1})}), {{[] { norm(m, 1, Shape{2}); }, "norm: "}}},
      {"norm_2", MINIDL_SAMPLE_OP({norm(t[0], 2)}), {{[] { norm(ints, 2); }, "norm: "}}},
      {"norm_inf", MINIDL_SAMPLE_OP({norm(t[0], std::numeric_limits<double>::infinity(), Shape{0, 2}, true)}),
       {{[] { norm(m, std::numeric_limits<double>::infinity(), Shape{-3}); }, "norm: "}}},
      {"any", MINIDL_SAMPLE_OP({any(t[0], Shape{1})}), {{[] { any(m, Shape{2}); }, "any: "}}},
      {"all", MINIDL_SAMPLE_OP({all(t[0], Shape{-1}, true)}), {{[] { all(m, Shape{-3}); }, "all: "}}},
      {"cumsum", MINIDL_SAMPLE_OP({cumsum(t[0], 1)}), {{[] { cumsum(m, 2); }, "cumsum: "}}},
      {"cumsum_negative_dim", MINIDL_SAMPLE_OP({cumsum(t[0], -1)}), {{[] { cumsum(m, -3); }, "cumsum: "}}},
      {"cumprod", MINIDL_SAMPLE_OP({cumprod(t[0], -1)}), {{[] { cumprod(m, 2); }, "cumprod: "}}},
      {"softmax", MINIDL_SAMPLE_OP({softmax(t[0], 1)}),
       {{[] { softmax(m, 2); }, "softmax: "}, {[] { softmax(ints, 1); }, "softmax: "}}},
      {"softmax_last", MINIDL_SAMPLE_OP({softmax(t[0], -1)}), {{[] { softmax(m, -3); }, "softmax: "}}},
      {"log_softmax", MINIDL_SAMPLE_OP({log_softmax(t[0], -1)}),
       {{[] { log_softmax(ints, -1); }, "log_softmax: "}}},
      {"log_softmax_dim0", MINIDL_SAMPLE_OP({log_softmax(t[0], 0)}), {{[] { log_softmax(m, 2); }, "log_softmax: "}}},
      {"sort", MINIDL_SAMPLE_OP(both(sort(t[0], -1))), {{[] { sort(m, 2); }, "sort: "}}},
      {"sort_descending", MINIDL_SAMPLE_OP(both(sort(t[0], 0, true))), {{[] { sort(m, -3); }, "sort: "}}},
      {"argsort", MINIDL_SAMPLE_OP({argsort(t[0], -1, true)}), {{[] { argsort(m, 2); }, "argsort: "}}},
      {"topk", MINIDL_SAMPLE_OP(both(topk(t[0], 3, -1))),
       {{[] { topk(m, 4, -1); }, "topk: "}, {[] { topk(m, 1, 2); }, "topk: "}}},
      {"topk_smallest", MINIDL_SAMPLE_OP(both(topk(t[0], 2, 0, false))), {{[] { topk(m, -1, 0); }, "topk: "}}},
      {"matmul", MINIDL_SAMPLE_OP({matmul(t[0], t[1])}),
       {{[] { matmul(zeros({2, 3}), zeros({4, 2})); }, "matmul: "},
        {[] { matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)); }, "matmul: "},
        {[] { matmul(zeros({2, 2, 3}), zeros({3, 3, 2})); }, "matmul: "}}, 2},
      {"bmm", MINIDL_SAMPLE_OP({bmm(t[0], t[1])}),
       {{[] { bmm(zeros({2, 3, 4}), zeros({3, 4, 5})); }, "bmm: "}, {[] { bmm(zeros({3, 4}), zeros({4, 5})); }, "bmm: "}}, 2},
      {"baddbmm", MINIDL_SAMPLE_OP({baddbmm(t[0], t[1], t[2], 0.5, 2.0)}),
       {{[] { baddbmm(zeros({2, 3, 4}), zeros({2, 3, 4}), zeros({2, 5, 4})); }, "baddbmm: expected [b, n, k] and [b, k, m]"}}, 2},
      {"addmm", MINIDL_SAMPLE_OP({addmm(t[0], t[1], t[2], 0.5, 2.0)}),
       {{[] { addmm(zeros({3, 5}), zeros({3, 4}), zeros({3, 5})); }, "addmm: shapes [3, 4] and [3, 5] cannot be multiplied"},
        {[] { addmm(zeros({4}), zeros({3, 4}), zeros({4, 5})); }, "addmm: shapes [4] and [3, 5]"}}, 2},
      {"outer", MINIDL_SAMPLE_OP({outer(t[0], t[1])}), {{[] { outer(m, zeros({3})); }, "outer: "}}},
      {"einsum_matmul", MINIDL_SAMPLE_OP({einsum("ij,jk->ik", {t[0], t[1]})}),
       {{[] { einsum("ij,jk->ik", {zeros({3, 4}), zeros({5, 2})}); }, "einsum: "}}, 2},
      {"einsum_batch", MINIDL_SAMPLE_OP({einsum("bij,bkj->bik", {t[0], t[1]})}),
       {{[] { einsum("bij,bkj->bik", {zeros({3, 4}), zeros({2, 5, 4})}); }, "einsum: "}}, 2},
      {"einsum_trace_sum", MINIDL_SAMPLE_OP({einsum("ii->", {t[0]})}),
       {{[] { einsum("ii->", {zeros({3, 4})}); }, "einsum: "}}, 2},
      {"einsum_outer", MINIDL_SAMPLE_OP({einsum("i,j->ij", {t[0], t[1]})}),
       {{[] { einsum("i,j->ij", {zeros({3})}); }, "einsum: "}}},
      {"chunk", MINIDL_SAMPLE_OP(chunk(t[0], 3, 1)),
       {{[] { chunk(m, 0, 1); }, "chunk: "}, {[] { chunk(m, 2, 2); }, "chunk: "}}},
      {"split", MINIDL_SAMPLE_OP(split(t[0], 2, -1)), {{[] { split(m, 2, -3); }, "split: "}}},
      {"split_sizes", MINIDL_SAMPLE_OP(split(t[0], Shape{1, 3}, 0)),
       {{[] { split(m, Shape{1, 2}, 0); }, "split"}}},
      {"unbind", MINIDL_SAMPLE_OP(unbind(t[0], 1)), {{[] { unbind(m, 2); }, "unbind: "}}},
      {"repeat", MINIDL_SAMPLE_OP({repeat(t[0], Shape{2, 1, 3})}), {{[] { repeat(m, Shape{2}); }, "repeat: "}}},
      {"repeat_interleave", MINIDL_SAMPLE_OP({repeat_interleave(t[0], 2, 1)}),
       {{[] { repeat_interleave(m, 2, 2); }, "repeat_interleave: "}, {[] { repeat_interleave(m, -1, 0); }, "repeat_interleave: "}}},
      {"repeat_interleave_flat", MINIDL_SAMPLE_OP({repeat_interleave(t[0], 3)}), {}},
      {"flip", MINIDL_SAMPLE_OP({flip(t[0], Shape{0, -1})}),
       {{[] { flip(m, Shape{2}); }, "flip: "}, {[] { flip(m, Shape{0, -2}); }, "flip: "}}},
      {"roll", MINIDL_SAMPLE_OP({roll(t[0], Shape{1, -2}, Shape{0, 2})}),
       {{[] { roll(m, Shape{1}, Shape{2}); }, "roll: "}, {[] { roll(m, Shape{1, 2}, Shape{0}); }, "roll: "}}},
      {"roll_flat", MINIDL_SAMPLE_OP({roll(t[0], Shape{5})}), {}},
      {"tril", MINIDL_SAMPLE_OP({tril(t[0])}), {{[] { tril(zeros({3})); }, "tril: "}}},
      {"triu", MINIDL_SAMPLE_OP({triu(t[0], 1)}), {{[] { triu(zeros({3})); }, "triu: "}}},
      {"triu_negative", MINIDL_SAMPLE_OP({triu(t[0], -1)}), {}},
      {"gather", MINIDL_SAMPLE_OP({gather(t[0], 1, t[1])}),
       {{[] { gather(m, 2, index); }, "gather: "}, {[] { gather(m, 1, zeros({2, 2})); }, "gather: "}}},
      {"gather_dim0", MINIDL_SAMPLE_OP({gather(t[0], 0, t[1])}),
       {{[] { gather(m, 0, full({1, 1}, 5.0, kInt64)); }, "gather: "}}},
      {"scatter", MINIDL_SAMPLE_OP({scatter(t[0], 1, t[1], t[2])}),
       {{[] { scatter(m, 2, index, m); }, "scatter: "}, {[] { scatter(m, 1, index, ints); }, "scatter: "}}},
      {"scatter_add", MINIDL_SAMPLE_OP({scatter_add(t[0], 0, t[1], t[2])}),
       {{[] { scatter_add(m, -3, index, m); }, "scatter_add: "}, {[] { scatter_add(m, 0, zeros({2, 2}), m); }, "scatter_add: "}}},
      {"index_add", MINIDL_SAMPLE_OP({index_add(t[0], 0, t[1], t[2], 1.5)}),
       {{[] { index_add(m, 2, zeros({2}, kInt64), m); }, "index_add: "},
        {[] { index_add(m, 0, zeros({2}, kInt64), zeros({2, 4})); }, "index_add: "}}},
      {"index_select", MINIDL_SAMPLE_OP({index_select(t[0], -1, t[1])}),
       {{[] { index_select(m, 2, zeros({2}, kInt64)); }, "index_select: "},
        {[] { index_select(m, 0, zeros({2})); }, "index_select: "}}},
      {"masked_fill", MINIDL_SAMPLE_OP({masked_fill(t[0], t[1], -1.5)}),
       {{[] { masked_fill(m, zeros({2, 3}), 1.0); }, "masked_fill: "}, {[] { masked_fill(m, zeros({4}, kBool), 1.0); }, "masked_fill: shapes [2, 3] and [4]"}}},
      {"masked_select", MINIDL_SAMPLE_OP({masked_select(t[0], t[1])}),
       {{[] { masked_select(m, zeros({2, 3})); }, "masked_select: "}, {[] { masked_select(m, zeros({4}, kBool)); }, "masked_select: "}}},
      {"where", MINIDL_SAMPLE_OP({where(t[0], t[1], t[2])}),
       {{[] { where(zeros({2, 3}), m, m); }, "where: "}, {[] { where(zeros({4}, kBool), m, m); }, "where: "}}},
      {"cat", MINIDL_SAMPLE_OP({cat(t, 1)}),
       {{[] { cat({m, zeros({3, 3})}, 1); }, "cat: "}, {[] { cat({m, m}, 2); }, "cat: "}, {[] { cat({}, 0); }, "cat: "}}},
      {"cat_negative_dim", MINIDL_SAMPLE_OP({cat(t, -1)}), {{[] { cat({m, m}, -3); }, "cat: "}}},
      {"stack", MINIDL_SAMPLE_OP({stack(t, 1)}),
       {{[] { stack({m, zeros({3, 2})}, 0); }, "stack: "}, {[] { stack({m, m}, 3); }, "stack: "}}},
      {"stack_last", MINIDL_SAMPLE_OP({stack(t, -1)}), {{[] { stack({}, 0); }, "stack: "}}},
      {"pad_constant", MINIDL_SAMPLE_OP({pad(t[0], Shape{1, 2, 0, 1}, PadMode::Constant, 0.5)}),
       {{[] { pad(m, Shape{1, 2, 3}); }, "pad: "}}},
      {"pad_reflect", MINIDL_SAMPLE_OP({pad(t[0], Shape{2, 1, 1, 1}, PadMode::Reflect)}),
       {{[] { pad(zeros({1, 2, 3, 4}), Shape{4, 4}, PadMode::Reflect); }, "pad: "}}},
      {"interpolate_nearest", MINIDL_SAMPLE_OP({upsample_nearest2d(t[0], Shape{5, 3})}),
       {{[] { upsample_nearest2d(m, Shape{5, 3}); }, "upsample_nearest2d: "}}},
      {"interpolate_bilinear", MINIDL_SAMPLE_OP({upsample_bilinear2d(t[0], Shape{5, 6}, false)}),
       {{[] { upsample_bilinear2d(zeros({1, 1, 2, 2}), Shape{5}, false); }, "upsample_bilinear2d: "}}},
      {"interpolate_bilinear_align_corners", MINIDL_SAMPLE_OP({upsample_bilinear2d(t[0], Shape{2, 7}, true)}), {}},
      {"mse_loss", MINIDL_SAMPLE_OP({mse_loss(t[0], t[1])}),
       {{[] { mse_loss(m, zeros({4})); }, "mse_loss: "}, {[] { mse_loss(ints, ints); }, "mse_loss: "}}},
      {"mse_loss_sum", MINIDL_SAMPLE_OP({mse_loss(t[0], t[1], Reduction::Sum)}), {}},
      // PyTorch's F.l1_loss: minidl's L1 is smooth_l1_loss with beta 0.
      {"l1_loss", MINIDL_SAMPLE_OP({smooth_l1_loss(t[0], t[1], Reduction::None, 0.0)}),
       {{[] { smooth_l1_loss(m, zeros({4}), Reduction::None, 0.0); }, "smooth_l1_loss: "}}},
      {"smooth_l1_loss", MINIDL_SAMPLE_OP({smooth_l1_loss(t[0], t[1], Reduction::Mean, 0.5)}),
       {{[] { smooth_l1_loss(m, m, Reduction::Mean, -1.0); }, "smooth_l1_loss: "}}},
      {"huber_loss", MINIDL_SAMPLE_OP({huber_loss(t[0], t[1], Reduction::Sum, 0.7)}),
       {{[] { huber_loss(m, m, Reduction::Mean, 0.0); }, "huber_loss: "}}},
      {"binary_cross_entropy", MINIDL_SAMPLE_OP({binary_cross_entropy(t[0], t[1])}),
       {{[] { binary_cross_entropy(m, zeros({3, 2})); }, "binary_cross_entropy: "},
        {[] { binary_cross_entropy(full({2}, 1.5), zeros({2})); }, "binary_cross_entropy: "}}},
      {"binary_cross_entropy_with_logits",
       MINIDL_SAMPLE_OP({binary_cross_entropy_with_logits(t[0], t[1], {}, {}, Reduction::Sum)}),
       {{[] { binary_cross_entropy_with_logits(m, zeros({3, 2})); }, "binary_cross_entropy_with_logits: "}}},
      {"kl_div", MINIDL_SAMPLE_OP({kl_div(log_softmax(t[0], 1), softmax(t[1], 1), KLDivReduction::BatchMean)}),
       {{[] { kl_div(m, zeros({4})); }, "kl_div: "}}},
      {"nll_loss", MINIDL_SAMPLE_OP({nll_loss(log_softmax(t[0], 1), t[1])}),
       {{[] { nll_loss(m, zeros({2})); }, "nll_loss: "}, {[] { nll_loss(m, full({2}, 3.0, kInt64)); }, "nll_loss: "}}},
      {"cross_entropy", MINIDL_SAMPLE_OP({cross_entropy(t[0], t[1])}),
       {{[] { cross_entropy(m, zeros({3}, kInt64)); }, "cross_entropy: "}, {[] { cross_entropy(ints, zeros({2}, kInt64)); }, "cross_entropy: "}}},
      {"cross_entropy_ignore_index", MINIDL_SAMPLE_OP({cross_entropy(t[0], t[1], Reduction::Sum, 0.0, 2)}), {}},
      {"cross_entropy_label_smoothing", MINIDL_SAMPLE_OP({cross_entropy(t[0], t[1], Reduction::Mean, 0.2)}),
       {{[] { cross_entropy(m, zeros({2}, kInt64), Reduction::Mean, 1.5); }, "cross_entropy: "}}},
  };
  return rows;
}
#undef MINIDL_SAMPLE_OP
// clang-format on

}  // namespace minidl::testing
