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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "op_reference.h"))
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


if __name__ == "__main__":
    main()
