#!/usr/bin/env python3
"""Writes tests/ops/promotion_reference.h: PyTorch's torch.promote_types over every pair of
minidl's dtypes, and torch.result_type for tensors of 1 and 0 dimensions and for scalars, which
tests/ops/type_promotion_test.cpp compares with core/type_promotion.h.

    python3 tools/reference/make_promotion_reference.py [--output tests/ops/promotion_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). A scalar is an integral double (2.0) or a
fractional one (2.5): minidl reads 2.0 as an integer scalar, so PyTorch is asked with the int 2
for it, and with the float 2.5 for the other.
"""
import argparse
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
SCALARS = [(2.0, 2), (2.5, 2.5)]  # minidl's double, the Python scalar PyTorch is asked with


def cpp_dtype(dtype):
    return "k" + {"float32": "Float32", "float64": "Float64", "float16": "Float16",
                  "bfloat16": "BFloat16", "int32": "Int32", "int64": "Int64", "uint8": "UInt8",
                  "bool": "Bool"}[dtype]


def name(dtype):
    return str(dtype).replace("torch.", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "promotion_reference.h"))
    args = parser.parse_args()
    t = {d: getattr(torch, d) for d in DTYPES}
    pairs, results, scalars = [], [], []
    for a in DTYPES:
        for b in DTYPES:
            pairs.append((a, b, name(torch.promote_types(t[a], t[b]))))
            for a_dim in (1, 0):
                for b_dim in (1, 0):
                    x = torch.ones([2] * a_dim, dtype=t[a])
                    y = torch.ones([2] * b_dim, dtype=t[b])
                    results.append((a, a_dim, b, b_dim, name(torch.result_type(x, y))))
        for dim in (1, 0):
            for value, python_value in SCALARS:
                x = torch.ones([2] * dim, dtype=t[a])
                scalars.append((a, dim, value, name(torch.result_type(x, python_value))))
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_promotion_reference.py with PyTorch {torch.__version__}; "
        "do not edit.",
        "// torch.promote_types and torch.result_type for tests/ops/type_promotion_test.cpp.",
        "#include <cstdint>",
        "#include <vector>",
        "",
        '#include "minidl/core/dtype.h"',
        "",
        "namespace minidl::testing {",
        "",
        "struct PromoteTypesReference {",
        "  DType a, b, promoted;",
        "};",
        "",
        "struct ResultTypeReference {",
        "  DType a;",
        "  int64_t a_dim;  // 1: shape [2]; 0: a 0-dimensional tensor",
        "  DType b;",
        "  int64_t b_dim;",
        "  DType result;",
        "};",
        "",
        "struct ScalarResultTypeReference {",
        "  DType tensor;",
        "  int64_t dim;",
        "  double scalar;",
        "  DType result;",
        "};",
        "",
        "inline const std::vector<PromoteTypesReference> kPromoteTypesReferences = {",
    ]
    lines += [f"    {{{cpp_dtype(a)}, {cpp_dtype(b)}, {cpp_dtype(p)}}}," for a, b, p in pairs]
    lines += ["};", "", "inline const std::vector<ResultTypeReference> kResultTypeReferences = {"]
    lines += [f"    {{{cpp_dtype(a)}, {ad}, {cpp_dtype(b)}, {bd}, {cpp_dtype(r)}}},"
              for a, ad, b, bd, r in results]
    lines += ["};", "",
              "inline const std::vector<ScalarResultTypeReference> kScalarResultTypeReferences = {"]
    lines += [f"    {{{cpp_dtype(a)}, {d}, {v!r}, {cpp_dtype(r)}}}," for a, d, v, r in scalars]
    lines += ["};", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as out:
        out.write("\n".join(lines))
    print(f"wrote {len(pairs)} pairs, {len(results)} result types, {len(scalars)} scalar cases to "
          f"{os.path.normpath(args.output)} (PyTorch {torch.__version__})")


if __name__ == "__main__":
    main()
