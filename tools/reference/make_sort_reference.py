#!/usr/bin/env python3
"""Writes tests/ops/sort_reference.h: PyTorch's sort and topk results for the cases of
tests/ops/sort_test.cpp, which the test carries so that it runs without PyTorch.

    python3 tools/reference/make_sort_reference.py [--output tests/ops/sort_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). Each case: an input of quarters (exact in
every dtype) with repeated values and, in floating dtypes, NaNs; PyTorch's values and int64
indices on the CPU. sort runs with stable=True (minidl's sort is always the stable one). For
topk, PyTorch does not promise which of equal values comes first: where the input has ties
among the selected values the script checks that torch.topk's values equal the first k of the
stable sort and takes the stable sort's indices, which is minidl's documented order (Note
[Sort order] in ops/sort_math.h); without ties it takes torch.topk's own.
"""
import argparse
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "bool": torch.bool,
}


def quarters(numel, modulus, nan_every=0, seed=0):
    """Element i: a quarter in [-modulus/8, modulus/8) with repeats; NaN every nan_every."""
    values = []
    for i in range(numel):
        if nan_every and i % nan_every == nan_every - 1:
            values.append(math.nan)
        else:
            values.append(((i * 7 + (i // 5) * 3 + seed) % modulus - modulus // 2) / 4)
    return values


def distinct(numel, seed=0):
    """A permutation of the quarters 0 .. numel-1, shifted: no ties."""
    return [(((i * 5 + seed) % numel) - numel // 2) / 4 for i in range(numel)] if numel % 5 else \
        [(((i * 3 + seed) % numel) - numel // 2) / 4 for i in range(numel)]


# name, op, dtype, shape, dim, descending/largest, k (topk), input
CASES = [
    ("sort_float32_last_ascending_ties_nan", "sort", "float32", [2, 3, 5], -1, False, 0,
     quarters(30, 9, nan_every=7)),
    ("sort_float32_middle_descending", "sort", "float32", [2, 3, 5], 1, True, 0,
     quarters(30, 5, nan_every=11)),
    ("sort_float32_first_descending", "sort", "float32", [4, 3], 0, True, 0,
     quarters(12, 4)),
    ("sort_float64_1d_descending_nan", "sort", "float64", [9], 0, True, 0,
     quarters(9, 6, nan_every=4)),
    ("sort_bfloat16_ascending_ties", "sort", "bfloat16", [4, 6], -1, False, 0,
     quarters(24, 11, nan_every=9)),
    ("sort_float16_ascending", "sort", "float16", [3, 5], 1, False, 0, quarters(15, 13)),
    ("sort_int64_descending_ties", "sort", "int64", [3, 7], -1, True, 0,
     [float(int(v)) for v in quarters(21, 40)]),
    ("sort_bool_ascending", "sort", "bool", [2, 6], -1, False, 0,
     [float(i % 3 == 1) for i in range(12)]),
    ("sort_zero_dim", "sort", "float32", [], 0, False, 0, [1.5]),
    ("topk_float32_largest", "topk", "float32", [3, 8], -1, True, 3, distinct(24, 1)),
    ("topk_float32_smallest_middle", "topk", "float32", [4, 5, 3], 1, False, 2,
     distinct(60, 2)),
    ("topk_int64_largest_ties", "topk", "int64", [2, 9], -1, True, 4,
     [float(int(v)) for v in quarters(18, 24)]),
    ("topk_float32_nan_largest", "topk", "float32", [2, 6], -1, True, 2,
     quarters(12, 9, nan_every=5)),
    ("topk_bfloat16_largest", "topk", "bfloat16", [2, 10], -1, True, 5, distinct(20, 3)),
    ("topk_float32_smallest_ties_nan", "topk", "float32", [3, 6], 1, False, 4,
     quarters(18, 5, nan_every=4)),
]


def run_case(op, dtype, shape, dim, flag, k, values):
    x = torch.tensor(values, dtype=torch.float64).reshape(shape).to(DTYPES[dtype])
    stable_values, stable_indices = torch.sort(x, dim=dim, descending=flag, stable=True)
    if op == "sort":
        return stable_values, stable_indices
    top_values, top_indices = torch.topk(x, k, dim=dim, largest=flag, sorted=True)
    prefix_values = stable_values.narrow(dim if shape else 0, 0, k)
    prefix_indices = stable_indices.narrow(dim if shape else 0, 0, k)
    assert torch.equal(top_values.double().nan_to_num(1e300),
                       prefix_values.double().nan_to_num(1e300)), "topk values != sort prefix"
    return top_values, (top_indices if torch.equal(top_indices, prefix_indices) else
                        prefix_indices)


def literal(v):
    if math.isnan(v):
        return "kNaN"
    return repr(float(v))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "sort_reference.h"))
    args = parser.parse_args()
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_sort_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's sort and topk results for tests/ops/sort_test.cpp: see the script.",
        "#include <cstdint>",
        "#include <limits>",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "inline constexpr double kSortNaN = std::numeric_limits<double>::quiet_NaN();",
        "",
        "struct SortReference {",
        "  const char* name;",
        "  const char* op;     // \"sort\" or \"topk\"",
        "  const char* dtype;  // as dtype_name()",
        "  std::vector<int64_t> shape;",
        "  int64_t dim;",
        "  bool descending;  // sort's descending, topk's largest",
        "  int64_t k;        // topk only",
        "  std::vector<double> input;    // row-major",
        "  std::vector<double> values;   // row-major, of the result's shape",
        "  std::vector<int64_t> indices;",
        "};",
        "",
        "// clang-format off",
        "inline const SortReference kSortReferences[] = {",
    ]
    for name, op, dtype, shape, dim, flag, k, values in CASES:
        out_values, out_indices = run_case(op, dtype, shape, dim, flag, k, values)
        x_values = torch.tensor(values, dtype=torch.float64).to(DTYPES[dtype]).double().tolist()
        lines.append(f'  {{"{name}", "{op}", "{dtype}", {{{", ".join(map(str, shape))}}}, {dim}, '
                     f'{"true" if flag else "false"}, {k},')
        lines.append("   {" + ", ".join(literal(v) for v in x_values).replace("kNaN", "kSortNaN")
                     + "},")
        lines.append("   {" + ", ".join(literal(v) for v in out_values.double().flatten().tolist())
                     .replace("kNaN", "kSortNaN") + "},")
        lines.append("   {" + ", ".join(str(i) for i in out_indices.flatten().tolist()) + "}},")
    lines += ["};", "// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {len(CASES)} cases to {args.output}")


if __name__ == "__main__":
    main()
