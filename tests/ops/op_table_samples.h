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

// The sample's tensor, its floating values rounded to `dtype` (int64 and bool kept).
inline Tensor sample_tensor(const SampleTensor& t, DType dtype) {
  const Tensor values =
      t.values.empty() ? zeros(t.shape, kFloat64) : from_host(t.values.data(), t.shape, kFloat64);
  switch (t.kind) {
    case 'i': return values.to(kInt64);
    case 'b': return values.to(kBool);
    default: return values.to(dtype);
  }
}

// sum_k sum(out_k * sample_weights(numel, k)) over the floating outputs, as the script's loss,
// each term in its output's dtype and on its device; undefined when no output is floating.
inline Tensor weighted_loss(const SampleOutputTensors& outputs) {
  Tensor loss;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].is_floating_point()) continue;
    const Tensor weights = sample_weights(outputs[k].numel(), static_cast<int64_t>(k))
                               .to(outputs[k].dtype())
                               .to(outputs[k].device());
    const Tensor term = (outputs[k].reshape({-1}) * weights).sum();
    loss = loss.defined() ? loss + term : term;
  }
  return loss;
}

// clang-format off
#define MINIDL_SAMPLE_OP(...) [](const SampleInputs& t) -> SampleOutputTensors { return __VA_ARGS__; }
inline const std::vector<SampleRow>& sample_rows() {
  static const Tensor m = zeros({2, 3});
  static const Tensor ints = zeros({2, 3}, kInt64);
  static const Tensor index = zeros({2, 2}, kInt64);
  static const std::vector<SampleRow> rows = {
      {"sum", MINIDL_SAMPLE_OP({sum(t[0])}), {{[] { sum(ints, Shape{2}); }, "sum: dimension out of range"}}},
      {"sum_dims", MINIDL_SAMPLE_OP({sum(t[0], Shape{0, -1})}),
       {{[] { sum(m, Shape{0, 2}); }, "sum: dimension out of range"}, {[] { sum(m, Shape{1, -1}); }, "sum: dim 1 appears more than once in the list of dims [1, -1]"}}},
      {"sum_keepdim", MINIDL_SAMPLE_OP({sum(t[0], Shape{1}, true)}), {{[] { sum(m, Shape{-3}, true); }, "sum: dimension out of range"}}},
      {"mean", MINIDL_SAMPLE_OP({mean(t[0])}), {{[] { mean(ints); }, "mean: expected a floating-point tensor"}}},
      {"mean_dims", MINIDL_SAMPLE_OP({mean(t[0], Shape{-2}, true)}),
       {{[] { mean(m, Shape{2}); }, "mean: dimension out of range"}, {[] { mean(ints, Shape{0}); }, "mean: expected a floating-point tensor"}}},
      {"prod", MINIDL_SAMPLE_OP({prod(t[0])}), {{[] { prod(m, -3); }, "prod: dimension out of range"}}},
      {"prod_dim", MINIDL_SAMPLE_OP({prod(t[0], -1, true)}), {{[] { prod(m, 2); }, "prod: dimension out of range"}}},
      {"amax", MINIDL_SAMPLE_OP({amax(t[0], Shape{0, 2})}), {{[] { amax(m, Shape{3}); }, "amax: dimension out of range"}}},
      {"amin", MINIDL_SAMPLE_OP({amin(t[0], Shape{-1}, true)}),
       {{[] { amin(m, Shape{-3}); }, "amin: dimension out of range"}, {[] { amin(zeros({0, 3}), Shape{0}); }, "amin: expected a non-empty reduction, got shape [0, 3] over dims [0]"}}},
      {"max_dim", MINIDL_SAMPLE_OP(both(max(t[0], 1))), {{[] { max(m, 2); }, "max: dimension out of range"}}},
      {"min_dim", MINIDL_SAMPLE_OP(both(min(t[0], -1, true))),
       {{[] { min(m, -3); }, "min: dimension out of range"}, {[] { min(zeros({2, 0}), 1); }, "min: expected a non-empty dim to reduce, but dim 1 of shape [2, 0] has"}}},
      {"var", MINIDL_SAMPLE_OP({var(t[0])}), {{[] { var(ints); }, "var: expected a floating-point tensor"}}},
      {"var_correction0", MINIDL_SAMPLE_OP({var(t[0], Shape{0, -1}, 0)}), {{[] { var(m, Shape{2}, 0); }, "var: dimension out of range"}}},
      {"std", MINIDL_SAMPLE_OP({minidl::std(t[0], Shape{1}, 1, true)}), {{[] { minidl::std(ints); }, "std: expected a floating-point tensor"}}},
      {"std_correction0", MINIDL_SAMPLE_OP({minidl::std(t[0], Shape{-1}, 0)}),
       {{[] { minidl::std(m, Shape{-3}, 0); }, "std: dimension out of range"}}},
      {"logsumexp", MINIDL_SAMPLE_OP({logsumexp(t[0], Shape{1})}),
       {{[] { logsumexp(m, Shape{2}); }, "logsumexp: dimension out of range"}}},
      {"logsumexp_keepdim", MINIDL_SAMPLE_OP({logsumexp(t[0], Shape{0, -1}, true)}),
       {{[] { logsumexp(ints, Shape{0}); }, "logsumexp: expected a floating-point tensor"}}},
      {"norm_1", MINIDL_SAMPLE_OP({norm(t[0], 1, Shape{-1})}), {{[] { norm(m, 1, Shape{2}); }, "norm: dimension out of range"}}},
      {"norm_2", MINIDL_SAMPLE_OP({norm(t[0], 2)}), {{[] { norm(ints, 2); }, "norm: expected a floating-point tensor, got int64"}}},
      {"norm_inf", MINIDL_SAMPLE_OP({norm(t[0], std::numeric_limits<double>::infinity(), Shape{0, 2}, true)}),
       {{[] { norm(m, std::numeric_limits<double>::infinity(), Shape{-3}); }, "norm: dimension out of range"}}},
      {"any", MINIDL_SAMPLE_OP({any(t[0], Shape{1})}), {{[] { any(m, Shape{2}); }, "any: dimension out of range"}}},
      {"all", MINIDL_SAMPLE_OP({all(t[0], Shape{-1}, true)}), {{[] { all(m, Shape{-3}); }, "all: dimension out of range"}}},
      {"cumsum", MINIDL_SAMPLE_OP({cumsum(t[0], 1)}), {{[] { cumsum(m, 2); }, "cumsum: dimension out of range"}}},
      // The Tensor method, x.cumsum(dim).
      {"cumsum_negative_dim", MINIDL_SAMPLE_OP({t[0].cumsum(-1)}), {{[] { m.cumsum(-3); }, "cumsum: dimension out of range"}}},
      {"cumprod", MINIDL_SAMPLE_OP({cumprod(t[0], -1)}), {{[] { cumprod(m, 2); }, "cumprod: dimension out of range"}}},
      {"softmax", MINIDL_SAMPLE_OP({softmax(t[0], 1)}),
       {{[] { softmax(m, 2); }, "softmax: dimension out of range"}, {[] { softmax(ints, 1); }, "softmax: expected the input to be floating-point"}}},
      {"softmax_last", MINIDL_SAMPLE_OP({softmax(t[0], -1)}), {{[] { softmax(m, -3); }, "softmax: dimension out of range"}}},
      {"log_softmax", MINIDL_SAMPLE_OP({log_softmax(t[0], -1)}),
       {{[] { log_softmax(ints, -1); }, "log_softmax: expected the input to be floating-point"}}},
      {"log_softmax_dim0", MINIDL_SAMPLE_OP({log_softmax(t[0], 0)}), {{[] { log_softmax(m, 2); }, "log_softmax: dimension out of range"}}},
      {"sort", MINIDL_SAMPLE_OP(both(sort(t[0], -1))), {{[] { sort(m, 2); }, "sort: dimension out of range"}}},
      {"sort_descending", MINIDL_SAMPLE_OP(both(sort(t[0], 0, true))), {{[] { sort(m, -3); }, "sort: dimension out of range"}}},
      {"argsort", MINIDL_SAMPLE_OP({argsort(t[0], -1, true)}), {{[] { argsort(m, 2); }, "argsort: dimension out of range"}}},
      {"topk", MINIDL_SAMPLE_OP(both(topk(t[0], 3, -1))),
       {{[] { topk(m, 4, -1); }, "topk: k must be in [0, 3]"}, {[] { topk(m, 1, 2); }, "topk: dimension out of range"}}},
      {"topk_smallest", MINIDL_SAMPLE_OP(both(topk(t[0], 2, 0, false))), {{[] { topk(m, -1, 0); }, "topk: k must be in [0, 2]"}}},
      {"matmul", MINIDL_SAMPLE_OP({matmul(t[0], t[1])}),
       {{[] { matmul(zeros({2, 3}), zeros({4, 2})); }, "matmul: shapes [2, 3] and [4, 2] cannot be multiplied"},
        {[] { matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)); }, "matmul: expected operands of the same dtype, got float32 and float64"},
        {[] { matmul(zeros({2, 2, 3}), zeros({3, 3, 2})); }, "matmul: batch sizes 2 and 3 of shapes [2, 2, 3] and [3, 3, 2] cannot be"}}, 2},
      {"bmm", MINIDL_SAMPLE_OP({bmm(t[0], t[1])}),
       {{[] { bmm(zeros({2, 3, 4}), zeros({3, 4, 5})); }, "bmm: expected [b, n, k] and [b, k, m] operands, got shapes [2, 3, 4]"}, {[] { bmm(zeros({3, 4}), zeros({4, 5})); }, "bmm: expected 3-D operands, got shapes [3, 4] and [4, 5]"}}, 2},
      {"baddbmm", MINIDL_SAMPLE_OP({baddbmm(t[0], t[1], t[2], 0.5, 2.0)}),
       {{[] { baddbmm(zeros({2, 3, 4}), zeros({2, 3, 4}), zeros({2, 5, 4})); }, "baddbmm: expected [b, n, k] and [b, k, m] batches, got shapes [2, 3, 4]"}}, 2},
      {"addmm", MINIDL_SAMPLE_OP({addmm(t[0], t[1], t[2], 0.5, 2.0)}),
       {{[] { addmm(zeros({3, 5}), zeros({3, 4}), zeros({3, 5})); }, "addmm: shapes [3, 4] and [3, 5] cannot be multiplied"},
        {[] { addmm(zeros({4}), zeros({3, 4}), zeros({4, 5})); }, "addmm: shapes [4] and [3, 5] cannot be broadcast together"}}, 2},
      {"outer", MINIDL_SAMPLE_OP({outer(t[0], t[1])}), {{[] { outer(m, zeros({3})); }, "outer: expected 1-D vectors, got shapes [2, 3] and [3]"}}},
      {"einsum_matmul", MINIDL_SAMPLE_OP({einsum("ij,jk->ik", {t[0], t[1]})}),
       {{[] { einsum("ij,jk->ik", {zeros({3, 4}), zeros({5, 2})}); }, "einsum: subscript j has size 5 in operand 1 of equation"}}, 2},
      {"einsum_batch", MINIDL_SAMPLE_OP({einsum("bij,bkj->bik", {t[0], t[1]})}),
       {{[] { einsum("bij,bkj->bik", {zeros({3, 4}), zeros({2, 5, 4})}); }, "einsum: operand 0 has 2 dims"}}, 2},
      {"einsum_trace_sum", MINIDL_SAMPLE_OP({einsum("ii->", {t[0]})}),
       {{[] { einsum("ii->", {zeros({3, 4})}); }, "einsum: subscript i is repeated for operand 0 of equation"}}, 2},
      {"einsum_outer", MINIDL_SAMPLE_OP({einsum("i,j->ij", {t[0], t[1]})}),
       {{[] { einsum("i,j->ij", {zeros({3})}); }, "einsum: equation"}}},
      {"chunk", MINIDL_SAMPLE_OP(chunk(t[0], 3, 1)),
       {{[] { chunk(m, 0, 1); }, "chunk: expected chunks > 0, got 0"}, {[] { chunk(m, 2, 2); }, "chunk: dimension out of range"}}},
      {"split", MINIDL_SAMPLE_OP(split(t[0], 2, -1)), {{[] { split(m, 2, -3); }, "split: dimension out of range"}}},
      {"split_sizes", MINIDL_SAMPLE_OP(split(t[0], Shape{1, 3}, 0)),
       {{[] { split(m, Shape{1, 2}, 0); }, "split: split_sizes [1, 2] add up to 3, but dimension 0 of shape [2, 3]"}}},
      {"unbind", MINIDL_SAMPLE_OP(unbind(t[0], 1)), {{[] { unbind(m, 2); }, "unbind: dimension out of range"}}},
      {"repeat", MINIDL_SAMPLE_OP({repeat(t[0], Shape{2, 1, 3})}), {{[] { repeat(m, Shape{2}); }, "repeat: expected at least 2 repeats for a tensor of shape [2, 3], got"}}},
      {"repeat_interleave", MINIDL_SAMPLE_OP({repeat_interleave(t[0], 2, 1)}),
       {{[] { repeat_interleave(m, 2, 2); }, "repeat_interleave: dimension out of range"}, {[] { repeat_interleave(m, -1, 0); }, "repeat_interleave: expected repeats >= 0, got -1"}}},
      {"repeat_interleave_flat", MINIDL_SAMPLE_OP({repeat_interleave(t[0], 3)}), {}},
      {"flip", MINIDL_SAMPLE_OP({flip(t[0], Shape{0, -1})}),
       {{[] { flip(m, Shape{2}); }, "flip: dimension out of range"}, {[] { flip(m, Shape{0, -2}); }, "flip: dim -2 appears more than once in [0, -2]"}}},
      {"roll", MINIDL_SAMPLE_OP({roll(t[0], Shape{1, -2}, Shape{0, 2})}),
       {{[] { roll(m, Shape{1}, Shape{2}); }, "roll: dimension out of range"}, {[] { roll(m, Shape{1, 2}, Shape{0}); }, "roll: expected as many shifts as dims, got shifts [1, 2] and dims [0]"}}},
      {"roll_flat", MINIDL_SAMPLE_OP({roll(t[0], Shape{5})}), {}},
      {"tril", MINIDL_SAMPLE_OP({tril(t[0])}), {{[] { tril(zeros({3})); }, "tril: expected a tensor with at least 2 dimensions, got shape [3]"}}},
      {"triu", MINIDL_SAMPLE_OP({triu(t[0], 1)}), {{[] { triu(zeros({3})); }, "triu: expected a tensor with at least 2 dimensions, got shape [3]"}}},
      {"triu_negative", MINIDL_SAMPLE_OP({triu(t[0], -1)}), {}},
      {"gather", MINIDL_SAMPLE_OP({gather(t[0], 1, t[1])}),
       {{[] { gather(m, 2, index); }, "gather: dimension out of range"}, {[] { gather(m, 1, zeros({2, 2})); }, "gather: expected an int64 index, got float32"}}},
      {"gather_dim0", MINIDL_SAMPLE_OP({gather(t[0], 0, t[1])}),
       {{[] { gather(m, 0, full({1, 1}, 5.0, kInt64)); }, "gather: index 5 at position 0 of the index is out of range for a"}}},
      {"scatter", MINIDL_SAMPLE_OP({scatter(t[0], 1, t[1], t[2])}),
       {{[] { scatter(m, 2, index, m); }, "scatter: dimension out of range"}, {[] { scatter(m, 1, index, ints); }, "scatter: expected src of the input's dtype float32, got int64"}}},
      {"scatter_add", MINIDL_SAMPLE_OP({scatter_add(t[0], 0, t[1], t[2])}),
       {{[] { scatter_add(m, -3, index, m); }, "scatter_add: dimension out of range"}, {[] { scatter_add(m, 0, zeros({2, 2}), m); }, "scatter_add: expected an int64 index, got float32"}}},
      {"index_add", MINIDL_SAMPLE_OP({index_add(t[0], 0, t[1], t[2], 1.5)}),
       {{[] { index_add(m, 2, zeros({2}, kInt64), m); }, "index_add: dimension out of range"},
        {[] { index_add(m, 0, zeros({2}, kInt64), zeros({2, 4})); }, "index_add: expected source of shape [2, 3]"}}},
      {"index_select", MINIDL_SAMPLE_OP({index_select(t[0], -1, t[1])}),
       {{[] { index_select(m, 2, zeros({2}, kInt64)); }, "index_select: dimension out of range"},
        {[] { index_select(m, 0, zeros({2})); }, "index_select: expected a 1-D int64 index, got float32 of shape [2]"}}},
      {"masked_fill", MINIDL_SAMPLE_OP({masked_fill(t[0], t[1], -1.5)}),
       {{[] { masked_fill(m, zeros({2, 3}), 1.0); }, "masked_fill: expected a bool mask, got float32"}, {[] { masked_fill(m, zeros({4}, kBool), 1.0); }, "masked_fill: shapes [2, 3] and [4] cannot be broadcast together"}}},
      {"masked_select", MINIDL_SAMPLE_OP({masked_select(t[0], t[1])}),
       {{[] { masked_select(m, zeros({2, 3})); }, "masked_select: expected a bool mask, got float32"}, {[] { masked_select(m, zeros({4}, kBool)); }, "masked_select: shapes [2, 3] and [4] cannot be broadcast together"}}},
      {"where", MINIDL_SAMPLE_OP({where(t[0], t[1], t[2])}),
       {{[] { where(zeros({2, 3}), m, m); }, "where: expected the condition to be a bool tensor, got float32"}, {[] { where(zeros({4}, kBool), m, m); }, "where: shapes [4] and [2, 3] cannot be broadcast together"}}},
      {"cat", MINIDL_SAMPLE_OP({cat(t, 1)}),
       {{[] { cat({m, zeros({3, 3})}, 1); }, "cat: expected tensors of equal shape except in dimension 1, got [2, 3]"}, {[] { cat({m, m}, 2); }, "cat: dimension out of range"}, {[] { cat({}, 0); }, "cat: expected a non-empty list of tensors"}}},
      {"cat_negative_dim", MINIDL_SAMPLE_OP({cat(t, -1)}), {{[] { cat({m, m}, -3); }, "cat: dimension out of range"}}},
      {"stack", MINIDL_SAMPLE_OP({stack(t, 1)}),
       {{[] { stack({m, zeros({3, 2})}, 0); }, "stack: expected tensors of equal shape, got [2, 3] at position 0 and"}, {[] { stack({m, m}, 3); }, "stack: dimension out of range"}}},
      {"stack_last", MINIDL_SAMPLE_OP({stack(t, -1)}), {{[] { stack({}, 0); }, "stack: expected a non-empty list of tensors"}}},
      {"pad_constant", MINIDL_SAMPLE_OP({pad(t[0], Shape{1, 2, 0, 1}, PadMode::Constant, 0.5)}),
       {{[] { pad(m, Shape{1, 2, 3}); }, "pad: expected an even number of paddings, at most two per dimension of"}}},
      {"pad_reflect", MINIDL_SAMPLE_OP({pad(t[0], Shape{2, 1, 1, 1}, PadMode::Reflect)}),
       {{[] { pad(zeros({1, 2, 3, 4}), Shape{4, 4}, PadMode::Reflect); }, "pad: reflect padding of 2 values is not supported for a 4-D input of"}}},
      {"interpolate_nearest", MINIDL_SAMPLE_OP({upsample_nearest2d(t[0], Shape{5, 3})}),
       {{[] { upsample_nearest2d(m, Shape{5, 3}); }, "upsample_nearest2d: expected a 4-D input [N, C, H, W], got shape [2, 3]"}}},
      {"interpolate_bilinear", MINIDL_SAMPLE_OP({upsample_bilinear2d(t[0], Shape{5, 6}, false)}),
       {{[] { upsample_bilinear2d(zeros({1, 1, 2, 2}), Shape{5}, false); }, "upsample_bilinear2d: expected 2 output sizes, got [5]"}}},
      {"interpolate_bilinear_align_corners", MINIDL_SAMPLE_OP({upsample_bilinear2d(t[0], Shape{2, 7}, true)}), {}},
      {"expand_as", MINIDL_SAMPLE_OP({t[0].expand_as(t[1])}), {{[] { m.expand_as(zeros({3})); }, "expand: the number of sizes (1) must be at least the tensor's dimensions (2)"}}},
      {"mT", MINIDL_SAMPLE_OP({t[0].mT()}), {{[] { zeros({3}).mT(); }, "transpose: dimension out of range"}}},
      {"index_put_mask", MINIDL_SAMPLE_OP({index_put(t[0], {t[1]}, t[2])}),
       {{[] { index_put(m, {zeros({3}, kBool)}, zeros({1})); }, "index_put: "}}},
      {"index_put_accumulate", MINIDL_SAMPLE_OP({index_put(t[0], {t[1]}, t[2], true)}),
       {{[] { index_put(zeros({4, 3}), {full({5}, 1.0, kInt64)}, zeros({2, 3}), true); }, "index_put: values of shape [2, 3] cannot be broadcast to the indexing result's shape [5, 3]"}, {[] { index_put(m, {full({1}, 5.0, kInt64)}, zeros({1, 3}), true); }, "index_put: index 5 at position 0 is out of range for dimension 0 of size 2"}, {[] { m.index({full({1}, -3.0, kInt64)}); }, "index: index -3 at position 0 is out of range for dimension 0 of size 2"}}},
      {"linear", MINIDL_SAMPLE_OP({linear(t[0], t[1], t[2])}), {{[] { linear(m, zeros({4, 4})); }, "linear: "}}},
      {"conv1d", MINIDL_SAMPLE_OP({conv1d(t[0], t[1], t[2], 2, 1)}), {{[] { conv1d(m, zeros({4, 3, 3})); }, "conv1d: "}}},
      {"conv2d_groups", MINIDL_SAMPLE_OP({conv2d(t[0], t[1], t[2], 1, 1, 1, 2)}), {{[] { conv2d(zeros({1, 3, 5, 5}), zeros({6, 2, 3, 3}), {}, 1, 1, 1, 2); }, "conv2d: "}}},
      {"conv_transpose2d", MINIDL_SAMPLE_OP({conv_transpose2d(t[0], t[1], t[2], 2, 1, 1)}), {{[] { conv_transpose2d(m, zeros({3, 2, 3, 3})); }, "conv_transpose2d: "}}},
      {"max_pool2d", MINIDL_SAMPLE_OP({max_pool2d(t[0], 2, 1, 1)}), {{[] { max_pool2d(m, 2); }, "max_pool2d: "}}},
      {"avg_pool2d", MINIDL_SAMPLE_OP({avg_pool2d(t[0], 3, 2, 1, false)}), {{[] { avg_pool2d(m, 2); }, "avg_pool2d: "}}},
      {"adaptive_avg_pool2d", MINIDL_SAMPLE_OP({adaptive_avg_pool2d(t[0], Size2{2, 3})}), {{[] { adaptive_avg_pool2d(m, 2); }, "adaptive_avg_pool2d: "}}},
      {"batch_norm_training", MINIDL_SAMPLE_OP({batch_norm(t[0], {}, {}, t[1], t[2], true)}), {{[] { batch_norm(zeros({4, 3, 5}), {}, {}, zeros({2}), {}, true); }, "batch_norm: "}}},
      {"group_norm", MINIDL_SAMPLE_OP({group_norm(t[0], 2, t[1], t[2])}), {{[] { group_norm(zeros({2, 3, 4}), 2); }, "group_norm: "}}},
      {"layer_norm", MINIDL_SAMPLE_OP({layer_norm(t[0], Shape{4}, t[1], t[2])}), {{[] { layer_norm(m, Shape{4}); }, "layer_norm: "}}},
      {"normalize", MINIDL_SAMPLE_OP({nn::functional::normalize(t[0], nn::functional::NormalizeFuncOptions().p(2.0).dim(1))}), {}},
      {"embedding", MINIDL_SAMPLE_OP({embedding(t[0], t[1])}), {{[] { embedding(m, full({1}, 7.0, kInt64)); }, "embedding: index 7 at position 0 is out of range for an embedding table of 2 rows"}}},
      {"scaled_dot_product_attention_causal", MINIDL_SAMPLE_OP({scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, true)}), {{[] { scaled_dot_product_attention(zeros({1, 2, 4, 8}), zeros({1, 2, 4, 6}), zeros({1, 2, 4, 8})); }, "scaled_dot_product_attention: "}}},
      {"isclose", MINIDL_SAMPLE_OP({isclose(t[0], t[1])}),
       {{[] { isclose(m, zeros({2, 3}, kFloat64)); }, "isclose: expected both tensors to have one dtype, got float32 and float64"},
        {[] { isclose(m, zeros({4})); }, "isclose: shapes [2, 3] and [4] cannot be broadcast together"},
        {[] { isclose(m, m, 1e-5, -1.0); }, "isclose: expected atol >= 0, got -1"}}},
      // The Tensor method.
      {"isclose_tolerances", MINIDL_SAMPLE_OP({t[0].isclose(t[1], 0.1, 0.05, true)}),
       {{[] { m.isclose(m, -0.5); }, "isclose: expected rtol >= 0, got -0.5"}}},
      {"mse_loss", MINIDL_SAMPLE_OP({mse_loss(t[0], t[1])}),
       {{[] { mse_loss(m, zeros({4})); }, "mse_loss: expected target of the input's shape [2, 3], got target of"}, {[] { mse_loss(ints, ints); }, "mse_loss: expected input to be floating-point"}}},
      {"mse_loss_sum", MINIDL_SAMPLE_OP({mse_loss(t[0], t[1], Reduction::Sum)}), {}},
      {"l1_loss", MINIDL_SAMPLE_OP({l1_loss(t[0], t[1], Reduction::None)}),
       {{[] { l1_loss(m, zeros({4}), Reduction::None); }, "l1_loss: shapes [2, 3] and [4] cannot be broadcast together"},
        {[] { l1_loss(ints, ints); }, "l1_loss: expected a floating-point input (float32, float64, float16 or bfloat16), got int64"}}},
      // The functional form with LibTorch's options, and the module.
      {"l1_loss_mean", MINIDL_SAMPLE_OP({nn::functional::l1_loss(t[0], t[1])}),
       {{[] { l1_loss(m, zeros({2, 3}, kFloat64)); }, "l1_loss: expected target of the input's dtype float32, got target of dtype float64"}}},
      {"l1_loss_sum", MINIDL_SAMPLE_OP({nn::L1Loss(nn::L1LossOptions().reduction(Reduction::Sum))->forward(t[0], t[1])}), {}},
      {"smooth_l1_loss", MINIDL_SAMPLE_OP({smooth_l1_loss(t[0], t[1], Reduction::Mean, 0.5)}),
       {{[] { smooth_l1_loss(m, m, Reduction::Mean, -1.0); }, "smooth_l1_loss: expected beta >= 0, got -1"}}},
      {"huber_loss", MINIDL_SAMPLE_OP({huber_loss(t[0], t[1], Reduction::Sum, 0.7)}),
       {{[] { huber_loss(m, m, Reduction::Mean, 0.0); }, "huber_loss: expected delta > 0, got 0"}}},
      {"binary_cross_entropy", MINIDL_SAMPLE_OP({binary_cross_entropy(t[0], t[1])}),
       {{[] { binary_cross_entropy(m, zeros({3, 2})); }, "binary_cross_entropy: expected target of the input's shape [2, 3], got"},
        {[] { binary_cross_entropy(full({2}, 1.5), zeros({2})); }, "binary_cross_entropy: all elements of input should be between 0 and 1"}}},
      {"binary_cross_entropy_with_logits",
       MINIDL_SAMPLE_OP({binary_cross_entropy_with_logits(t[0], t[1], {}, {}, Reduction::Sum)}),
       {{[] { binary_cross_entropy_with_logits(m, zeros({3, 2})); }, "binary_cross_entropy_with_logits: expected target of the input's shape"}}},
      {"kl_div", MINIDL_SAMPLE_OP({kl_div(log_softmax(t[0], 1), softmax(t[1], 1), KLDivReduction::BatchMean)}),
       {{[] { kl_div(m, zeros({4})); }, "kl_div: shapes [2, 3] and [4] cannot be broadcast together"}}},
      {"nll_loss", MINIDL_SAMPLE_OP({nll_loss(log_softmax(t[0], 1), t[1])}),
       {{[] { nll_loss(m, zeros({2})); }, "nll_loss: expected target of dtype int64"}, {[] { nll_loss(m, full({2}, 3.0, kInt64)); }, "nll_loss: target 3 at index 0 is out of range for 3 classes"}}},
      {"cross_entropy", MINIDL_SAMPLE_OP({cross_entropy(t[0], t[1])}),
       {{[] { cross_entropy(m, zeros({3}, kInt64)); }, "cross_entropy: expected target of shape [2] for logits of shape [2, 3],"}, {[] { cross_entropy(ints, zeros({2}, kInt64)); }, "cross_entropy: expected logits to be floating-point"}}},
      {"cross_entropy_ignore_index", MINIDL_SAMPLE_OP({cross_entropy(t[0], t[1], Reduction::Sum, 0.0, 2)}), {}},
      {"cross_entropy_label_smoothing", MINIDL_SAMPLE_OP({cross_entropy(t[0], t[1], Reduction::Mean, 0.2)}),
       {{[] { cross_entropy(m, zeros({2}, kInt64), Reduction::Mean, 1.5); }, "cross_entropy: expected label_smoothing in [0, 1], got 1.5"}}},
  };
  return rows;
}
#undef MINIDL_SAMPLE_OP
// clang-format on

}  // namespace minidl::testing
