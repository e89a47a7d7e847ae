#!/usr/bin/env python3
"""Writes tests/ops/op_reference.h: PyTorch's values for the operator table's rows
(tests/ops/op_table_test.cpp), which the tests carry so that they run without PyTorch.

    python3 tools/reference/make_op_reference.py [--output tests/ops/op_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). For each unary op: 24 inputs spread over the
op's domain (never on an integer or a half, where floor, round and sign jump), and from PyTorch
on the CPU: the output in float64, in float32 (of the inputs rounded to float32), in bfloat16 and
in float16 (of the inputs rounded to those), and the float64 gradient of sum(out * upstream) for
the upstream 0.5 + i / 24. The binary ops likewise, with a second operand of the same shape and
the float64 gradients of both operands. Adding a row: a line in UNARY or BINARY below and one in
the test's table (tests/ops/op_table.h).

The sample-input rows (SAMPLE below; OpInfo's sample inputs) go to tests/ops/op_sample_reference.h:
for any op over a list of tensors, each sample's inputs (drawn here with a fixed seed and written
out, so the test needs no generator of its own), the outputs (every piece of a multi-output op)
in each dtype the row lists, computed by PyTorch on the CPU from the float64 inputs rounded to
that dtype, and the float64 gradients of sum_k sum(out_k * w_k) for the fixed weights
upstream_weights() gives, which the test computes alike.
"""
import argparse
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
COUNT = 24

# name as in minidl, PyTorch's op, domain [lo, hi]
UNARY = [
    ("exp", torch.exp, -3.0, 3.0),
    ("log", torch.log, 0.05, 5.0),
    ("sqrt", torch.sqrt, 0.05, 5.0),
    ("abs", torch.abs, -3.0, 3.0),
    ("relu", torch.relu, -3.0, 3.0),
    ("sigmoid", torch.sigmoid, -5.0, 5.0),
    ("tanh", torch.tanh, -3.0, 3.0),
    ("gelu", F.gelu, -4.0, 4.0),
    ("sin", torch.sin, -3.0, 3.0),
    ("cos", torch.cos, -3.0, 3.0),
    ("tan", torch.tan, -1.4, 1.4),
    ("asin", torch.asin, -0.95, 0.95),
    ("acos", torch.acos, -0.95, 0.95),
    ("atan", torch.atan, -4.0, 4.0),
    ("sinh", torch.sinh, -3.0, 3.0),
    ("cosh", torch.cosh, -3.0, 3.0),
    ("exp2", torch.exp2, -4.0, 4.0),
    ("expm1", torch.expm1, -2.0, 2.0),
    ("log1p", torch.log1p, -0.9, 3.0),
    ("log2", torch.log2, 0.05, 5.0),
    ("log10", torch.log10, 0.05, 5.0),
    ("erf", torch.erf, -2.5, 2.5),
    ("erfc", torch.erfc, -2.5, 2.5),
    ("floor", torch.floor, -3.3, 3.3),
    ("ceil", torch.ceil, -3.3, 3.3),
    ("trunc", torch.trunc, -3.3, 3.3),
    ("round", torch.round, -3.3, 3.3),
    ("frac", torch.frac, -3.3, 3.3),
    ("sign", torch.sign, -2.0, 2.0),
    ("rsqrt", torch.rsqrt, 0.1, 4.0),
    ("reciprocal", torch.reciprocal, 0.2, 3.0),
    ("square", torch.square, -3.0, 3.0),
    ("silu", F.silu, -5.0, 5.0),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), -4.0, 4.0),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), -3.0, 3.0),
    ("elu", lambda x: F.elu(x, 1.3), -3.0, 3.0),
    ("clamp", lambda x: torch.clamp(x, -0.7, 1.1), -3.0, 3.0),
    ("clamp_min", lambda x: torch.clamp_min(x, -0.7), -3.0, 3.0),
    ("clamp_max", lambda x: torch.clamp_max(x, 1.1), -3.0, 3.0),
    ("softplus", F.softplus, -4.0, 4.0),
    # beta 2 and threshold 3: a third of the inputs take the linear branch.
    ("softplus_beta", lambda x: F.softplus(x, beta=2.0, threshold=3.0), -3.0, 3.0),
    ("hardtanh", F.hardtanh, -3.0, 3.0),
    ("hardtanh_bounds", lambda x: F.hardtanh(x, -0.7, 1.1), -3.0, 3.0),
]


def divisors(lo, hi):
    """COUNT values of magnitude in [lo, hi], every third one negative, in another order than
    inputs() gives, so that no quotient is near an integer by design."""
    magnitudes = [lo + (hi - lo) * ((k + 0.61) / COUNT) for k in range(COUNT)]
    return [magnitudes[(5 * k) % COUNT] * (-1 if k % 3 == 1 else 1) for k in range(COUNT)]


# name as in minidl, PyTorch's op, the first operand's domain, the second operand's values
BINARY = [
    ("atan2", torch.atan2, (-3.0, 3.0), divisors(0.3, 3.0)),
    ("fmod", torch.fmod, (-5.0, 5.0), divisors(0.6, 2.2)),
    ("remainder", torch.remainder, (-5.0, 5.0), divisors(0.6, 2.2)),
    ("clamp_min_tensor", lambda x, lo: torch.clamp(x, min=lo), (-3.0, 3.0), divisors(0.1, 2.5)),
    ("clamp_max_tensor", lambda x, hi: torch.clamp(x, max=hi), (-3.0, 3.0), divisors(0.1, 2.5)),
]


def inputs(lo, hi):
    """COUNT points of [lo, hi] in a scrambled order, 0.37 of a step off the grid so that none is
    an integer or a half for the domains above."""
    points = [lo + (hi - lo) * ((k + 0.37) / COUNT) for k in range(COUNT)]
    return [points[(7 * k) % COUNT] for k in range(COUNT)]


def as_values(t):
    return [float(v) for v in t.to(torch.float64).tolist()]


def row(name, op, lo, hi):
    x = torch.tensor(inputs(lo, hi), dtype=torch.float64)
    upstream = torch.tensor([0.5 + k / COUNT for k in range(COUNT)], dtype=torch.float64)
    leaf = x.clone().requires_grad_()
    (op(leaf) * upstream).sum().backward()
    return {
        "name": name,
        "input": as_values(x),
        "float64": as_values(op(x)),
        "float32": as_values(op(x.to(torch.float32))),
        "bfloat16": as_values(op(x.to(torch.bfloat16))),
        "float16": as_values(op(x.to(torch.float16))),
        "grad": as_values(leaf.grad),
    }


def binary_row(name, op, domain, other_values):
    a = torch.tensor(inputs(*domain), dtype=torch.float64)
    b = torch.tensor(other_values, dtype=torch.float64)
    upstream = torch.tensor([0.5 + k / COUNT for k in range(COUNT)], dtype=torch.float64)
    leaf_a, leaf_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    (op(leaf_a, leaf_b) * upstream).sum().backward()
    out = {"name": name, "input": as_values(a), "other": as_values(b)}
    for dtype in ("float64", "float32", "bfloat16", "float16"):
        t = getattr(torch, dtype)
        out[dtype] = as_values(op(a.to(t), b.to(t)))
    out["grad_input"] = as_values(leaf_a.grad)
    out["grad_other"] = as_values(leaf_b.grad)
    return out


def cpp_array(values):
    return "{" + ", ".join(repr(v) if v == v else "kNaN" for v in values) + "}"


# ---- The sample-input rows (OpInfo's "sample inputs"): any op over a list of tensors. ----
# Each sample is a list of input specs; the row's PyTorch call takes the list of tensors and
# returns a tensor or a tuple/list of them (each piece of chunk, values and indices of sort).
# Input kinds: "x" a floating input the gradient flows to, "c" a floating constant (a target),
# "i" int64 (indices, class targets), "b" bool. Floating inputs take the dtype under test.
def T(*shape, kind="x", lo=-2.0, hi=2.0, values=None):
    return {"shape": list(shape), "kind": kind, "lo": lo, "hi": hi, "values": values}


def I(*shape, hi, values=None):  # noqa: E743 - int64 in [0, hi)
    return T(*shape, kind="i", lo=0, hi=hi, values=values)


def B(*shape, values=None):
    return T(*shape, kind="b", values=values)


def P(*shape, kind="x"):  # probabilities, away from 0 and 1
    return T(*shape, kind=kind, lo=0.05, hi=0.95)


NAN = float("nan")
FLOATS = ("float64", "float32", "bfloat16", "float16")
WIDE = ("float64", "float32", "bfloat16")  # ops without a float16 CPU kernel in PyTorch
ONCE = ("float64",)  # bool or integer-valued: the dtype does not matter


def log_probs(t):
    return t.log_softmax(1)


# name as in minidl's table (tests/ops/op_table.h), PyTorch's call, samples, dtypes
SAMPLE = [
    ("sum", lambda t: t[0].sum(), [[T(2, 3, 4)], [T(0, 3)]], FLOATS),
    ("sum_dims", lambda t: t[0].sum((0, -1)), [[T(2, 3, 4)], [T(3, 0)]], FLOATS),
    ("sum_keepdim", lambda t: t[0].sum(1, keepdim=True), [[T(2, 3, 4)]], FLOATS),
    ("mean", lambda t: t[0].mean(), [[T(2, 3, 4)]], FLOATS),
    ("mean_dims", lambda t: t[0].mean((-2,), keepdim=True), [[T(2, 3, 4)]], FLOATS),
    ("prod", lambda t: t[0].prod(), [[T(2, 3, lo=0.5, hi=1.5)]], FLOATS),
    ("prod_dim", lambda t: t[0].prod(-1, keepdim=True), [[T(2, 3, 4, lo=0.5, hi=1.5)]], FLOATS),
    ("amax", lambda t: t[0].amax((0, 2)), [[T(2, 3, 4)]], FLOATS),
    ("amin", lambda t: t[0].amin(-1, keepdim=True), [[T(2, 3, 4)]], FLOATS),
    ("max_dim", lambda t: t[0].max(1), [[T(2, 3, 4)]], FLOATS),
    ("min_dim", lambda t: t[0].min(-1, keepdim=True), [[T(2, 3, 4)]], FLOATS),
    ("var", lambda t: t[0].var(), [[T(2, 3, 4)]], FLOATS),
    ("var_correction0", lambda t: t[0].var((0, -1), correction=0), [[T(2, 3, 4)]], FLOATS),
    ("std", lambda t: t[0].std(1, keepdim=True), [[T(2, 3, 4)]], FLOATS),
    ("std_correction0", lambda t: t[0].std((-1,), correction=0), [[T(2, 3, 4)]], FLOATS),
    ("logsumexp", lambda t: t[0].logsumexp((1,)), [[T(2, 3, 4, lo=-5, hi=5)]], FLOATS),
    ("logsumexp_keepdim", lambda t: t[0].logsumexp((0, -1), keepdim=True), [[T(2, 3, 4)]],
     FLOATS),
    ("norm_1", lambda t: torch.norm(t[0], 1, (-1,)), [[T(2, 3, 4)]], FLOATS),
    ("norm_2", lambda t: torch.norm(t[0], 2), [[T(2, 3, 4)]], FLOATS),
    ("norm_inf", lambda t: torch.norm(t[0], float("inf"), (0, 2), keepdim=True), [[T(2, 3, 4)]],
     FLOATS),
    ("any", lambda t: t[0].any(1),
     [[B(2, 3, values=[1, 0, 0, 0, 0, 0])], [B(2, 0)]], ONCE),
    ("all", lambda t: t[0].all(-1, keepdim=True),
     [[B(2, 3, values=[1, 1, 1, 1, 0, 1])], [B(2, 0)]], ONCE),
    ("cumsum", lambda t: t[0].cumsum(1), [[T(2, 5, 3)], [T(0, 4)]], FLOATS),
    ("cumsum_negative_dim", lambda t: t[0].cumsum(-1), [[T(2, 5, 3)]], FLOATS),
    ("cumprod", lambda t: t[0].cumprod(-1), [[T(2, 3, 5, lo=0.5, hi=1.5)]], FLOATS),
    ("softmax", lambda t: t[0].softmax(1), [[T(2, 5, 3, lo=-4, hi=4)]], FLOATS),
    ("softmax_last", lambda t: t[0].softmax(-1), [[T(3, 7)], [T(0, 7)]], FLOATS),
    ("log_softmax", lambda t: t[0].log_softmax(-1), [[T(2, 3, 7, lo=-4, hi=4)]], FLOATS),
    ("log_softmax_dim0", lambda t: t[0].log_softmax(0), [[T(4, 3)]], FLOATS),
    ("sort", lambda t: t[0].sort(-1), [[T(3, 6)]], FLOATS),
    ("sort_descending", lambda t: t[0].sort(0, descending=True), [[T(5, 3)]], FLOATS),
    ("argsort", lambda t: t[0].argsort(-1, descending=True), [[T(3, 6, kind="c")]], FLOATS),
    ("topk", lambda t: t[0].topk(3, -1), [[T(3, 6)]], FLOATS),
    ("topk_smallest", lambda t: t[0].topk(2, 0, largest=False), [[T(5, 3)]], FLOATS),
    ("matmul", lambda t: torch.matmul(t[0], t[1]),
     [[T(4), T(4)], [T(3, 4), T(4)], [T(4), T(4, 5)], [T(3, 4), T(4, 5)],
      [T(2, 3, 4), T(4, 5)], [T(2, 1, 3, 4), T(3, 4, 2)], [T(0, 4), T(4, 5)]], WIDE),
    ("bmm", lambda t: torch.bmm(t[0], t[1]), [[T(2, 3, 4), T(2, 4, 5)]], WIDE),
    ("baddbmm", lambda t: torch.baddbmm(t[0], t[1], t[2], beta=0.5, alpha=2.0),
     [[T(2, 3, 5), T(2, 3, 4), T(2, 4, 5)], [T(3, 1), T(2, 3, 4), T(2, 4, 5)]], WIDE),
    ("addmm", lambda t: torch.addmm(t[0], t[1], t[2], beta=0.5, alpha=2.0),
     [[T(3, 5), T(3, 4), T(4, 5)], [T(5), T(3, 4), T(4, 5)]], WIDE),
    ("outer", lambda t: torch.outer(t[0], t[1]), [[T(3), T(4)]], FLOATS),
    ("einsum_matmul", lambda t: torch.einsum("ij,jk->ik", t[0], t[1]), [[T(3, 4), T(4, 5)]],
     WIDE),
    ("einsum_batch", lambda t: torch.einsum("bij,bkj->bik", t[0], t[1]),
     [[T(2, 3, 4), T(2, 5, 4)]], WIDE),
    ("einsum_trace_sum", lambda t: torch.einsum("ii->", t[0]), [[T(4, 4)]], WIDE),
    ("einsum_outer", lambda t: torch.einsum("i,j->ij", t[0], t[1]), [[T(3), T(4)]], WIDE),
    ("chunk", lambda t: t[0].chunk(3, 1), [[T(2, 7)]], FLOATS),
    ("split", lambda t: t[0].split(2, -1), [[T(3, 5)]], FLOATS),
    ("split_sizes", lambda t: t[0].split([1, 3], 0), [[T(4, 2)]], FLOATS),
    ("unbind", lambda t: t[0].unbind(1), [[T(2, 3, 2)]], FLOATS),
    ("repeat", lambda t: t[0].repeat(2, 1, 3), [[T(3, 2)]], FLOATS),
    ("repeat_interleave", lambda t: t[0].repeat_interleave(2, 1), [[T(2, 3)]], FLOATS),
    ("repeat_interleave_flat", lambda t: t[0].repeat_interleave(3), [[T(2, 2)]], FLOATS),
    ("flip", lambda t: t[0].flip((0, -1)), [[T(2, 3, 4)]], FLOATS),
    ("roll", lambda t: t[0].roll((1, -2), (0, 2)), [[T(2, 3, 4)]], FLOATS),
    ("roll_flat", lambda t: t[0].roll(5), [[T(2, 3)]], FLOATS),
    ("tril", lambda t: t[0].tril(), [[T(4, 5)], [T(2, 3, 3)]], FLOATS),
    ("triu", lambda t: t[0].triu(1), [[T(4, 5)]], FLOATS),
    ("triu_negative", lambda t: t[0].triu(-1), [[T(2, 4, 3)]], FLOATS),
    ("gather", lambda t: t[0].gather(1, t[1]), [[T(3, 4), I(3, 2, hi=4)]], FLOATS),
    ("gather_dim0", lambda t: t[0].gather(0, t[1]), [[T(3, 4), I(2, 4, hi=3)]], FLOATS),
    ("scatter", lambda t: t[0].scatter(1, t[1], t[2]),
     [[T(2, 4), I(2, 3, hi=4, values=[3, 0, 1, 2, 1, 3]), T(2, 3)]], FLOATS),
    ("scatter_add", lambda t: t[0].scatter_add(0, t[1], t[2]),
     [[T(3, 2), I(4, 2, hi=3), T(4, 2)]], FLOATS),
    ("index_add", lambda t: t[0].index_add(0, t[1], t[2], alpha=1.5),
     [[T(4, 3), I(5, hi=4, values=[0, 2, 0, 3, 2]), T(5, 3)]], FLOATS),
    ("index_select", lambda t: t[0].index_select(-1, t[1]),
     [[T(3, 4), I(5, hi=4, values=[3, 0, 0, 2, 1])]], FLOATS),
    ("masked_fill", lambda t: t[0].masked_fill(t[1], -1.5),
     [[T(2, 3), B(2, 3, values=[1, 0, 0, 1, 1, 0])], [T(2, 3), B(3, values=[0, 1, 0])]], FLOATS),
    ("masked_select", lambda t: t[0].masked_select(t[1]),
     [[T(2, 3), B(2, 3, values=[1, 0, 0, 1, 1, 0])], [T(2, 3), B(3, values=[0, 1, 1])]], FLOATS),
    ("where", lambda t: torch.where(t[0], t[1], t[2]),
     [[B(2, 3, values=[1, 0, 0, 1, 1, 0]), T(2, 3), T(2, 3)],
      [B(3, values=[0, 1, 1]), T(2, 3), T(2, 1)]], FLOATS),
    ("cat", lambda t: torch.cat(t, 1), [[T(2, 3), T(2, 1), T(2, 0)]], FLOATS),
    ("cat_negative_dim", lambda t: torch.cat(t, -1), [[T(2, 1, 2), T(2, 1, 3)]], FLOATS),
    ("stack", lambda t: torch.stack(t, 1), [[T(2, 3), T(2, 3)]], FLOATS),
    ("stack_last", lambda t: torch.stack(t, -1), [[T(3), T(3), T(3)]], FLOATS),
    ("pad_constant", lambda t: F.pad(t[0], (1, 2, 0, 1), value=0.5), [[T(2, 3, 4)]], FLOATS),
    ("pad_reflect", lambda t: F.pad(t[0], (2, 1, 1, 1), mode="reflect"), [[T(1, 2, 3, 4)]],
     FLOATS),
    ("interpolate_nearest", lambda t: F.interpolate(t[0], size=(5, 3), mode="nearest"),
     [[T(1, 2, 3, 4)]], WIDE),
    ("interpolate_bilinear",
     lambda t: F.interpolate(t[0], size=(5, 6), mode="bilinear", align_corners=False),
     [[T(2, 1, 3, 4)]], WIDE),
    ("interpolate_bilinear_align_corners",
     lambda t: F.interpolate(t[0], size=(2, 7), mode="bilinear", align_corners=True),
     [[T(1, 2, 3, 4)]], WIDE),
    ("expand_as", lambda t: t[0].expand_as(t[1]), [[T(3, 1), T(2, 3, 4, kind="c")]], FLOATS),
    ("mT", lambda t: t[0].mT, [[T(2, 3, 4)]], FLOATS),
    ("index_put_mask", lambda t: t[0].index_put((t[1],), t[2]),
     [[T(2, 3), B(2, 3, values=[1, 0, 0, 1, 1, 0]), T(3)]], FLOATS),
    ("index_put_accumulate", lambda t: t[0].index_put((t[1],), t[2], accumulate=True),
     [[T(4, 3), I(5, hi=4, values=[0, 2, 0, 3, 2]), T(5, 3)]], FLOATS),
    ("linear", lambda t: F.linear(t[0], t[1], t[2]), [[T(2, 3, 4), T(5, 4), T(5)]], WIDE),
    ("conv1d", lambda t: F.conv1d(t[0], t[1], t[2], stride=2, padding=1),
     [[T(2, 3, 7), T(4, 3, 3), T(4)]], WIDE),
    ("conv2d_groups", lambda t: F.conv2d(t[0], t[1], t[2], padding=1, groups=2),
     [[T(1, 4, 5, 5), T(6, 2, 3, 3), T(6)]], WIDE),
    ("conv_transpose2d",
     lambda t: F.conv_transpose2d(t[0], t[1], t[2], stride=2, padding=1, output_padding=1),
     [[T(1, 3, 3, 4), T(3, 2, 3, 3), T(2)]], WIDE),
    ("max_pool2d", lambda t: F.max_pool2d(t[0], 2, stride=1, padding=1),
     [[T(1, 2, 4, 5, values=[((7 * i) % 40) / 10.0 - 2.0 for i in range(40)])]], WIDE),
    ("avg_pool2d", lambda t: F.avg_pool2d(t[0], 3, stride=2, padding=1, count_include_pad=False),
     [[T(1, 2, 5, 5)]], WIDE),
    ("adaptive_avg_pool2d", lambda t: F.adaptive_avg_pool2d(t[0], (2, 3)), [[T(1, 2, 5, 7)]],
     WIDE),
    ("batch_norm_training", lambda t: F.batch_norm(t[0], None, None, t[1], t[2], training=True),
     [[T(4, 3, 5), T(3), T(3)]], WIDE),
    ("group_norm", lambda t: F.group_norm(t[0], 2, t[1], t[2]),
     [[T(2, 4, 3, 3), T(4), T(4)]], WIDE),
    ("layer_norm", lambda t: F.layer_norm(t[0], (4,), t[1], t[2]), [[T(2, 3, 4), T(4), T(4)]],
     WIDE),
    ("normalize", lambda t: F.normalize(t[0], p=2.0, dim=1), [[T(3, 4)]], FLOATS),
    # Without padding_idx: its row's zero gradient is a convention central differences deny.
    ("embedding", lambda t: F.embedding(t[1], t[0]),
     [[T(5, 3), I(2, 4, hi=5, values=[0, 2, 4, 4, 1, 2, 3, 0])]], WIDE),
    ("scaled_dot_product_attention_causal",
     lambda t: F.scaled_dot_product_attention(t[0], t[1], t[2], is_causal=True),
     [[T(1, 2, 4, 8), T(1, 2, 4, 8), T(1, 2, 4, 8)]], WIDE),
    # Values chosen away from the tolerance's edge in float32 (float64 and float32 only: a
    # 16-bit rounding moves them across it).
    ("isclose", lambda t: torch.isclose(t[0], t[1]),
     [[T(2, 3, kind="c", values=[1.0, 1.0, 1.0, NAN, 0.5, -2.0]),
       T(2, 3, kind="c", values=[1.0 + 5e-6, 1.1, 1.0 + 2e-5, NAN, 0.5, -2.0 - 1e-5])],
      [T(2, 3, kind="c", values=[3e-9, 4.00003, 1e-7, 4.0, 4.0001, -4.0]),
       T(3, kind="c", values=[0.0, 4.0, -4.0])],
      [T(0, 3, kind="c"), T(3, kind="c", values=[1.0, 2.0, 3.0])]], ("float64", "float32")),
    ("isclose_tolerances", lambda t: torch.isclose(t[0], t[1], rtol=0.1, atol=0.05, equal_nan=True),
     [[T(2, 3, kind="c", values=[1.0, 1.0, NAN, NAN, 0.0, 10.0]),
       T(2, 3, kind="c", values=[1.12, 1.2, NAN, 1.0, 0.04, 8.5])]], ("float64", "float32")),
    ("mse_loss", lambda t: F.mse_loss(t[0], t[1]), [[T(3, 4), T(3, 4)]], FLOATS),
    ("mse_loss_sum", lambda t: F.mse_loss(t[0], t[1], reduction="sum"), [[T(3, 4), T(3, 4)]],
     FLOATS),
    ("l1_loss", lambda t: F.l1_loss(t[0], t[1], reduction="none"), [[T(3, 4), T(3, 4)]], FLOATS),
    ("l1_loss_mean", lambda t: F.l1_loss(t[0], t[1]),
     [[T(3, 4), T(3, 4)], [T(2, 3), T(3, kind="c")]], FLOATS),
    # (The mean of an empty loss is NaN, which the table's comparison does not take.)
    ("l1_loss_sum", lambda t: F.l1_loss(t[0], t[1], reduction="sum"),
     [[T(2, 3, 2), T(2, 3, 2)], [T(0, 3), T(0, 3)]], FLOATS),
    ("smooth_l1_loss", lambda t: F.smooth_l1_loss(t[0], t[1], beta=0.5), [[T(3, 4), T(3, 4)]],
     FLOATS),
    ("huber_loss", lambda t: F.huber_loss(t[0], t[1], reduction="sum", delta=0.7),
     [[T(3, 4), T(3, 4)]], FLOATS),
    ("binary_cross_entropy", lambda t: F.binary_cross_entropy(t[0], t[1]),
     [[P(3, 4), P(3, 4, kind="c")]], WIDE),
    ("binary_cross_entropy_with_logits",
     lambda t: F.binary_cross_entropy_with_logits(t[0], t[1], reduction="sum"),
     [[T(3, 4, lo=-4, hi=4), P(3, 4, kind="c")]], FLOATS),
    ("kl_div", lambda t: F.kl_div(log_probs(t[0]), t[1].softmax(1), reduction="batchmean"),
     [[T(3, 4), T(3, 4, kind="c")]], FLOATS),
    ("nll_loss", lambda t: F.nll_loss(log_probs(t[0]), t[1]),
     [[T(4, 5), I(4, hi=5)], [T(4, 5), I(4, hi=5, values=[1, -100, 4, 0])]], WIDE),
    ("cross_entropy", lambda t: F.cross_entropy(t[0], t[1]), [[T(4, 5), I(4, hi=5)]], WIDE),
    ("cross_entropy_ignore_index",
     lambda t: F.cross_entropy(t[0], t[1], ignore_index=2, reduction="sum"),
     [[T(4, 5), I(4, hi=5, values=[2, 0, 2, 4])]], WIDE),
    ("cross_entropy_label_smoothing",
     lambda t: F.cross_entropy(t[0], t[1], label_smoothing=0.2),
     [[T(4, 5), I(4, hi=5, values=[1, -100, 3, 3])]], WIDE),
]

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16,
                "float16": torch.float16}


def sample_values(spec, seed):
    """The spec's values as float64: given, or drawn from [lo, hi) (bools 50/50)."""
    count = 1
    for s in spec["shape"]:
        count *= s
    if spec["values"] is not None:
        return [float(v) for v in spec["values"]]
    g = torch.Generator().manual_seed(seed)
    if spec["kind"] == "i":
        return [float(v) for v in torch.randint(spec["lo"], spec["hi"], (count,), generator=g)]
    if spec["kind"] == "b":
        return [float(v) for v in torch.randint(0, 2, (count,), generator=g)]
    u = torch.rand(count, generator=g, dtype=torch.float64)
    return [float(v) for v in spec["lo"] + (spec["hi"] - spec["lo"]) * u]


def as_torch(spec, values, dtype):
    t = torch.tensor(values, dtype=torch.float64).reshape(spec["shape"])
    if spec["kind"] == "i":
        return t.to(torch.int64)
    if spec["kind"] == "b":
        return t.to(torch.bool)
    return t.to(dtype)


def as_outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def output_kind(t):
    if t.dtype == torch.bool:
        return "b"
    return "x" if t.is_floating_point() else "i"


def upstream_weights(count, k):
    """The fixed weight of element i of output k in the loss sum(out * weight); the test has the
    same formula (tests/ops/op_table.h, sample_weights)."""
    return [0.5 + ((7 * i + 3 * k) % 11) / 11.0 for i in range(count)]


def sample_row(name, op, samples, dtypes):
    rows = []
    for index, specs in enumerate(samples):
        values = [sample_values(spec, 1000 * len(rows) + 17 * j + len(name))
                  for j, spec in enumerate(specs)]
        entry = {"name": name, "inputs": [(s["kind"], s["shape"], v) for s, v in zip(specs, values)],
                 "outputs": {}}
        for dtype in dtypes:
            tensors = [as_torch(s, v, TORCH_DTYPES[dtype]) for s, v in zip(specs, values)]
            entry["outputs"][dtype] = [(output_kind(o), list(o.shape), as_values(o.reshape(-1)))
                                       for o in as_outputs(op(tensors))]
        leaves = [as_torch(s, v, torch.float64) for s, v in zip(specs, values)]
        for s, leaf in zip(specs, leaves):
            if s["kind"] == "x":
                leaf.requires_grad_()
        differentiable = [leaf for leaf in leaves if leaf.requires_grad]
        grads = []
        if differentiable:
            loss = torch.zeros((), dtype=torch.float64)
            for k, o in enumerate(as_outputs(op(leaves))):
                if o.is_floating_point():
                    w = torch.tensor(upstream_weights(o.numel(), k), dtype=torch.float64)
                    loss = loss + (o.reshape(-1) * w).sum()
            found = (torch.autograd.grad(loss, differentiable, allow_unused=True)
                     if loss.requires_grad else [None] * len(differentiable))
            grads = [as_values((g if g is not None else torch.zeros_like(x)).reshape(-1))
                     for g, x in zip(found, differentiable)]
        entry["grads"] = grads
        rows.append(entry)
    return rows


def cpp_shape(shape):
    return "{" + ", ".join(str(s) for s in shape) + "}"


def write_sample_header(path):
    entries = [e for spec in SAMPLE for e in sample_row(*spec)]
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_op_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's values and float64 gradients for the operator table's sample-input rows",
        "// (tests/ops/op_table.h, SampleRow): see the script.",
        "#include <cstdint>",
        "#include <vector>",
        "",
        '#include "op_reference.h"',
        "",
        "namespace minidl::testing {",
        "",
        "// kind: 'x' floating (differentiable), 'c' floating constant, 'i' int64, 'b' bool.",
        "struct SampleTensor {",
        "  char kind;",
        "  std::vector<int64_t> shape;",
        "  std::vector<double> values;",
        "};",
        "",
        "struct SampleOutputs {",
        "  const char* dtype;  // of the floating inputs",
        "  std::vector<SampleTensor> outputs;",
        "};",
        "",
        "struct SampleReference {",
        "  const char* name;",
        "  std::vector<SampleTensor> inputs;",
        "  std::vector<SampleOutputs> outputs;",
        "  // float64, of sum over the floating outputs k of sum(out_k * sample_weights(numel, k)),",
        "  // one per 'x' input in order.",
        "  std::vector<std::vector<double>> grads;",
        "};",
        "",
        "// clang-format off",
        "inline const std::vector<SampleReference>& sample_references() {",
        "  static const std::vector<SampleReference> references = {",
    ]

    def tensor_literal(kind, shape, values):
        return f"{{'{kind}', {cpp_shape(shape)}, {cpp_array(values)}}}"

    for e in entries:
        lines.append(f'  {{"{e["name"]}",')
        lines.append("   {" + ", ".join(tensor_literal(*t) for t in e["inputs"]) + "},")
        lines.append("   {")
        for dtype, outs in e["outputs"].items():
            lines.append(f'    {{"{dtype}", {{' + ", ".join(tensor_literal(*o) for o in outs) + "}},")
        lines.append("   },")
        lines.append("   {" + ", ".join(cpp_array(g) for g in e["grads"]) + "},")
        lines.append("  },")
    lines += ["  };", "  return references;", "}", "// clang-format on", "",
              "}  // namespace minidl::testing", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {len(entries)} samples of {len(SAMPLE)} rows to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "op_reference.h"))
    parser.add_argument("--sample-output",
                        default=os.path.join(HERE, "..", "..", "tests", "ops",
                                             "op_sample_reference.h"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [row(*spec) for spec in UNARY]
    binary_rows = [binary_row(*spec) for spec in BINARY]
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_op_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's values for the operator table (tests/ops/op_table_test.cpp): see the script.",
        "#include <limits>",
        "",
        "namespace minidl::testing {",
        "",
        f"inline constexpr int kOpReferenceCount = {COUNT};",
        "inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();",
        "",
        "struct UnaryReference {",
        "  const char* name;",
        "  double input[kOpReferenceCount];",
        "  double float64[kOpReferenceCount];",
        "  double float32[kOpReferenceCount];",
        "  double bfloat16[kOpReferenceCount];",
        "  double float16[kOpReferenceCount];",
        "  double grad[kOpReferenceCount];  // of sum(out * (0.5 + i / 24)), float64",
        "};",
        "",
        "// clang-format off",
        "inline constexpr UnaryReference kUnaryReferences[] = {",
    ]
    for r in rows:
        lines.append(f'  {{"{r["name"]}",')
        for key in ("input", "float64", "float32", "bfloat16", "float16", "grad"):
            lines.append(f"   {cpp_array(r[key])},")
        lines.append("  },")
    lines += [
        "};",
        "",
        "struct BinaryReference {",
        "  const char* name;",
        "  double input[kOpReferenceCount];",
        "  double other[kOpReferenceCount];",
        "  double float64[kOpReferenceCount];",
        "  double float32[kOpReferenceCount];",
        "  double bfloat16[kOpReferenceCount];",
        "  double float16[kOpReferenceCount];",
        "  double grad_input[kOpReferenceCount];  // of sum(out * (0.5 + i / 24)), float64",
        "  double grad_other[kOpReferenceCount];",
        "};",
        "",
        "inline constexpr BinaryReference kBinaryReferences[] = {",
    ]
    for r in binary_rows:
        lines.append(f'  {{"{r["name"]}",')
        for key in ("input", "other", "float64", "float32", "bfloat16", "float16", "grad_input",
                    "grad_other"):
            lines.append(f"   {cpp_array(r[key])},")
        lines.append("  },")
    lines += ["};", "// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {len(rows)} unary and {len(binary_rows)} binary rows to {args.output}")
    write_sample_header(args.sample_output)


if __name__ == "__main__":
    main()
