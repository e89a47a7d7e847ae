#!/usr/bin/env python3
"""Writes tests/ops/attention_reference.h (PyTorch's scaled_dot_product_attention) and
tests/nn/multihead_attention_reference.h (nn.MultiheadAttention) on fixed inputs, which
tests/ops/attention_test.cpp and tests/nn/multihead_attention_test.cpp carry so that they run
without PyTorch.

    python3 tools/reference/make_attention_reference.py

Needs PyTorch (2.15 wrote the checked-in file). Inputs are the tests' wiggly() sequences:
element k (row-major) of a tensor with phase p is sin(1 + p + 0.37 k), computed in double and
rounded to the case's dtype; query, key, value and the upstream gradient take phases 0, 1, 2
and 3. The masks are formulas the test repeats (boolean_mask, additive_mask below). For each
case: the output and the gradients of sum(out * upstream) for query, key and value, from
PyTorch on the CPU in the case's dtype. Adding a case: a line in CASES below.
"""
import argparse
import math
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}


def wiggly(sizes, phase, dtype):
    count = math.prod(sizes)
    values = [math.sin(1.0 + phase + 0.37 * k) for k in range(count)]
    return torch.tensor(values, dtype=torch.float64).reshape(sizes).to(dtype)


def boolean_mask(t, s):
    """[T, S]: key j takes part for query i unless (3i + 5j) % 7 == 0; row 1 sees no key."""
    mask = torch.tensor([[(3 * i + 5 * j) % 7 != 0 for j in range(s)] for i in range(t)])
    if t > 1:
        mask[1, :] = False
    return mask


def additive_mask(b, t, s, dtype):
    """[B, 1, T, S]: 0.5 sin(0.7 k) (k row-major), -inf where (i + 2j) % 5 == 0."""
    values = torch.tensor([0.5 * math.sin(0.7 * k) for k in range(b * t * s)],
                          dtype=torch.float64).reshape(b, 1, t, s)
    for i in range(t):
        for j in range(s):
            if (i + 2 * j) % 5 == 0:
                values[:, :, i, j] = -math.inf
    return values.to(dtype)


# name, leading dims, T, S, D, Dv, dtype, mask ("none", "boolean", "additive"), is_causal, scale
CASES = [
    ("plain", (2, 2), 5, 7, 8, 6, "float32", "none", False, None),
    ("causal_short_queries", (2, 2), 5, 7, 8, 6, "float32", "none", True, None),
    ("causal_long_queries", (1, 3), 7, 5, 4, 4, "float32", "none", True, None),
    ("boolean_mask", (2, 2), 5, 7, 8, 6, "float32", "boolean", False, None),
    ("additive_mask", (2, 3), 6, 9, 8, 5, "float32", "additive", False, None),
    ("three_dims_scaled", (3,), 4, 6, 8, 8, "float32", "none", False, 0.3),
    ("many_blocks_causal", (1, 2), 70, 130, 16, 8, "float32", "none", True, None),
    ("many_blocks_masked", (1, 1), 37, 150, 32, 16, "float32", "boolean", False, None),
    ("bfloat16_plain", (2, 2), 5, 7, 8, 6, "bfloat16", "none", False, None),
    ("bfloat16_causal", (1, 2), 20, 70, 16, 16, "bfloat16", "none", True, None),
]


def values_of(t):
    return [float(v) for v in t.detach().to(torch.float64).flatten().tolist()]


def case_values(case):
    name, leading, t, s, d, dv, dtype_name, mask_kind, is_causal, scale = case
    dtype = DTYPES[dtype_name]
    q = wiggly(leading + (t, d), 0.0, dtype).requires_grad_()
    k = wiggly(leading + (s, d), 1.0, dtype).requires_grad_()
    v = wiggly(leading + (s, dv), 2.0, dtype).requires_grad_()
    upstream = wiggly(leading + (t, dv), 3.0, dtype)
    mask = None
    if mask_kind == "boolean":
        mask = boolean_mask(t, s)
    elif mask_kind == "additive":
        mask = additive_mask(leading[0], t, s, dtype)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                         scale=scale)
    (out * upstream).sum().backward()
    return [values_of(out), values_of(q.grad), values_of(k.grad), values_of(v.grad)]


def format_values(values):
    return "{" + ", ".join(repr(v) if math.isfinite(v) else "kNaN" for v in values) + "}"


def mha_values():
    """nn.MultiheadAttention(E=8, heads=2, batch_first=True) with wiggly weights (phases 4, 5,
    6, 7 for in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias), on query, key and
    value of phases 0, 1, 2 ([2, 5, 8], [2, 6, 8], [2, 6, 8]), key_padding_mask hiding key 4
    and 5 of batch 1; need_weights=True (averaged over heads)."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(wiggly((24, 8), 4.0, torch.float64) * 0.5)
        mha.in_proj_bias.copy_(wiggly((24,), 5.0, torch.float64) * 0.1)
        mha.out_proj.weight.copy_(wiggly((8, 8), 6.0, torch.float64) * 0.5)
        mha.out_proj.bias.copy_(wiggly((8,), 7.0, torch.float64) * 0.1)
    q = wiggly((2, 5, 8), 0.0, torch.float64)
    k = wiggly((2, 6, 8), 1.0, torch.float64)
    v = wiggly((2, 6, 8), 2.0, torch.float64)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, 4:] = True
    out, weights = mha(q, k, v, key_padding_mask=padding, need_weights=True)
    causal_out, _ = mha(q, q, q, need_weights=False,
                        attn_mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), 1),
                        is_causal=True)
    return values_of(out), values_of(weights), values_of(causal_out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", default=os.path.join(HERE, "..", "..", "tests"),
                        help="the tests folder the two headers go under")
    args = parser.parse_args()
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_attention_reference.py with PyTorch {torch.__version__}; "
        "do not edit.",
        "// PyTorch's scaled_dot_product_attention and nn.MultiheadAttention values: see the "
        "script.",
        "#include <cstdint>",
        "#include <limits>",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "struct AttentionReference {",
        "  const char* name;",
        "  std::vector<int64_t> leading;  // batch dims",
        "  int64_t query_length, key_length, head_dim, value_dim;",
        "  const char* dtype;  // \"float32\" or \"bfloat16\"",
        "  const char* mask;   // \"none\", \"boolean\" or \"additive\"",
        "  bool is_causal;",
        "  double scale;  // 0: the default 1 / sqrt(D)",
        "  std::vector<double> out, grad_query, grad_key, grad_value;",
        "};",
        "",
        "// clang-format off",
        "inline const AttentionReference kAttentionReferences[] = {",
    ]
    for case in CASES:
        name, leading, t, s, d, dv, dtype_name, mask_kind, is_causal, scale = case
        out, gq, gk, gv = case_values(case)
        leading_text = "{" + ", ".join(str(x) for x in leading) + "}"
        lines.append(f"  {{\"{name}\", {leading_text}, {t}, {s}, {d}, {dv}, \"{dtype_name}\", "
                     f"\"{mask_kind}\", {'true' if is_causal else 'false'}, "
                     f"{scale if scale is not None else 0.0},")
        for values in (out, gq, gk, gv):
            lines.append(f"   {format_values(values)},")
        lines.append("  },")
    lines += ["};", "// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(os.path.join(args.tests, "ops", "attention_reference.h"), "w") as f:
        f.write("\n".join(lines))

    out, weights, causal_out = mha_values()
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_attention_reference.py with PyTorch {torch.__version__}; "
        "do not edit.",
        "// PyTorch's nn.MultiheadAttention on the inputs of the script's mha_values().",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "// clang-format off",
        "// tools/reference/make_attention_reference.py's mha_values(): output [2, 5, 8], weights [2, 5, 6],",
        "// and the causal self-attention output [2, 5, 8].",
        f"inline const std::vector<double> kMultiheadAttentionOut = {format_values(out)};",
        f"inline const std::vector<double> kMultiheadAttentionWeights = "
        f"{format_values(weights)};",
        f"inline const std::vector<double> kMultiheadAttentionCausalOut = "
        f"{format_values(causal_out)};",
        "// clang-format on",
        "",
        "}  // namespace minidl::testing",
        "",
    ]
    with open(os.path.join(args.tests, "nn", "multihead_attention_reference.h"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
