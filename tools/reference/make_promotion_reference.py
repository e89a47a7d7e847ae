#!/usr/bin/env python3
"""Writes tests/ops/promotion_reference.h: PyTorch's torch.promote_types over every pair of
minidl's dtypes, torch.result_type for tensors of 1 and 0 dimensions and for scalars, which
tests/ops/type_promotion_test.cpp compares with core/type_promotion.h, and the dtype, shape and
values (or the error) of the ops that promote (OP_CASES), which tests/ops/promotion_ops_test.cpp
runs as the same expressions in C++.

    python3 tools/reference/make_promotion_reference.py [--output tests/ops/promotion_reference.h]

Needs PyTorch (2.15.0 wrote the checked-in file). A scalar is a Python int (2), float (2.0,
2.5) or bool (True), which minidl's Scalar takes from the C++ literal's type, as LibTorch does.
"""
import argparse
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
SCALARS = [2, 2.0, 2.5, True]

# The operands of OP_CASES, also written in tests/ops/promotion_ops_test.cpp.
I64 = torch.tensor([1, -2, 3])
I32 = torch.tensor([7, -7, 5], dtype=torch.int32)
U8 = torch.tensor([7, 3, 250], dtype=torch.uint8)
B = torch.tensor([True, False, True])
H = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float16)
F = torch.tensor([1.5, -2.5, 0.25])
D = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64)
DIVIDEND = torch.tensor([-7, 7, -7, 7, 0, 5])
DIVISOR = torch.tensor([2, 2, -2, -2, 3, -1])
ZERO_DIVISOR = torch.tensor([2, 0, 1, 1, 1, 1])
M32 = torch.ones(2, 2)
M64 = torch.ones(2, 2, dtype=torch.float64)

# name: the expression. A case whose expression raises is written as an expected error.
OP_CASES = {
    "tensor({1, 2, 3})": lambda: torch.tensor([1, 2, 3]),
    "tensor({1.0, 2.0})": lambda: torch.tensor([1.0, 2.0]),
    "tensor({1.5f, 2.5f})": lambda: torch.tensor([1.5, 2.5], dtype=torch.float32),
    "tensor({true, false})": lambda: torch.tensor([True, False]),
    "tensor({1, 2.5})": lambda: torch.tensor([1, 2.5]),
    "tensor({{1, 2}, {3, 4}})": lambda: torch.tensor([[1, 2], [3, 4]]),
    "tensor({{1.5, 2.0}})": lambda: torch.tensor([[1.5, 2.0]]),
    "tensor(3)": lambda: torch.tensor(3),
    "tensor(2.5)": lambda: torch.tensor(2.5),
    "tensor({1, 2}, kFloat64)": lambda: torch.tensor([1, 2], dtype=torch.float64),
    "tensor({{{1, 2}, {3, 4}}})": lambda: torch.tensor([[[1, 2], [3, 4]]]),
    "tensor({{{1.5, 2.0}}, {{3.0, 4.0}}})": lambda: torch.tensor([[[1.5, 2.0]], [[3.0, 4.0]]]),
    "tensor({{{true}}, {{false}}})": lambda: torch.tensor([[[True]], [[False]]]),
    "tensor({{{{1, 2}}, {{3, 4}}}})": lambda: torch.tensor([[[[1, 2]], [[3, 4]]]]),
    "tensor({{{{1, 2}}}}, kFloat64)": lambda: torch.tensor([[[[1, 2]]]], dtype=torch.float64),
    "tensor({{{1, 2}, {3}}}) (ragged)": lambda: torch.tensor([[[1, 2], [3]]]),
    "tensor({{{1, 2}}, {{1, 2}, {3, 4}}}) (ragged)": lambda: torch.tensor(
        [[[1, 2]], [[1, 2], [3, 4]]]),
    "tensor({{{{1}}, {{2}}}, {{{3}}}}) (ragged)": lambda: torch.tensor([[[[1]], [[2]]], [[[3]]]]),
    "arange(5)": lambda: torch.arange(5),
    "arange(24.0)": lambda: torch.arange(24.0),
    "arange(0.0, 1.0, 0.25)": lambda: torch.arange(0.0, 1.0, 0.25),
    "arange(0, 1, 0.25)": lambda: torch.arange(0, 1, 0.25),
    "arange(1, 2.5)": lambda: torch.arange(1, 2.5),
    "arange(-1.5, 1, 0.5)": lambda: torch.arange(-1.5, 1, 0.5),
    "arange(10, 0, -3)": lambda: torch.arange(10, 0, -3),
    "arange(5, kFloat64)": lambda: torch.arange(5, dtype=torch.float64),
    "arange(0, 1, 0.25, kInt64)": lambda: torch.arange(0, 1, 0.25, dtype=torch.int64),
    "arange(0.1, 0.9, 0.1)": lambda: torch.arange(0.1, 0.9, 0.1),
    "int64 + 2.0": lambda: I64 + 2.0,
    "int64 + 2": lambda: I64 + 2,
    "float16 + 2.0": lambda: H + 2.0,
    "float16 + 2": lambda: H + 2,
    "bool + 1": lambda: B + 1,
    "bool + 1.0": lambda: B + 1.0,
    "bool + true": lambda: B + True,
    "bool + false": lambda: B + False,
    "true + bool": lambda: True + B,
    "bool * true": lambda: B * True,
    "bool * false": lambda: B * False,
    "bool + bool": lambda: B + B.flip(0),
    "bool * bool": lambda: B * B.flip(0),
    "bool - true": lambda: B - True,
    "2.0 - int64": lambda: 2.0 - I64,
    "2 - int64": lambda: 2 - I64,
    "int64 - 1.0": lambda: I64 - 1.0,
    "int64 * 0.5": lambda: I64 * 0.5,
    "int64 * 2": lambda: I64 * 2,
    "0.5 * int32": lambda: 0.5 * I32,
    "int64 / 2": lambda: I64 / 2,
    "2 / int64": lambda: 2 / I64,
    "uint8 + 300": lambda: U8 + 300,
    "int64 < 2.5": lambda: I64 < 2.5,
    "int64 == 3.0": lambda: I64 == 3.0,
    "2.5 > int32": lambda: 2.5 > I32,
    "pow(int64, 0.5)": lambda: torch.pow(I64, 0.5),
    "pow(int64, 2)": lambda: torch.pow(I64, 2),
    "pow(int64, 2.0)": lambda: torch.pow(I64, 2.0),
    "pow(int32, 3)": lambda: torch.pow(I32, 3),
    "pow(bool, 2)": lambda: torch.pow(B, 2),
    "pow(float16, 2)": lambda: torch.pow(H, 2),
    "pow(int64, -1)": lambda: torch.pow(I64, -1),
    "clamp(int64, 0.5)": lambda: torch.clamp(I64, 0.5),
    "clamp(int64, 0, 2)": lambda: torch.clamp(I64, 0, 2),
    "clamp(int64, nullopt, 1.5)": lambda: torch.clamp(I64, max=1.5),
    "clamp_min(int32, 0.5)": lambda: torch.clamp_min(I32, 0.5),
    "clamp_max(int32, 2)": lambda: torch.clamp_max(I32, 2),
    "clamp(int64, float32 min)": lambda: torch.clamp(I64, torch.tensor([0.5, 0.5, 0.5])),
    "int64.clamp(0, 2)": lambda: I64.clamp(0, 2),
    "int64.clamp(0.5)": lambda: I64.clamp(0.5),
    "float32.clamp(nullopt, 1)": lambda: F.clamp(max=1),
    "float32.clamp(int64 min)": lambda: F.clamp(torch.tensor([2, 0, 0])),
    "int64.clamp(nullopt, float32 max)": lambda: I64.clamp(max=torch.tensor([0.5, 0.5, 0.5])),
    "int64.clamp_min(float32 0-d)": lambda: I64.clamp_min(torch.tensor(0.5)),
    "float32.clamp_max(1)": lambda: F.clamp_max(1),
    "int64.clamp_(0, 2)": lambda: I64.clone().clamp_(0, 2),
    "int64.clamp_(0.5)": lambda: I64.clone().clamp_(0.5),
    "float16.clamp_(-1, 1.5)": lambda: H.clone().clamp_(-1, 1.5),
    "float32.clamp_(int64 min)": lambda: F.clone().clamp_(torch.tensor([2, 0, 0])),
    "int64.clamp_(float32 min)": lambda: I64.clone().clamp_(torch.tensor([0.5, 0.5, 0.5])),
    "float32.clamp_(nullopt, max of shape [2, 3])": lambda: F.clone().clamp_(
        max=torch.zeros(2, 3)),
    "int32.clamp_min_(int64 0-d)": lambda: I32.clone().clamp_min_(torch.tensor(0)),
    "int32.clamp_max_(2)": lambda: I32.clone().clamp_max_(2),
    "isclose(uint8, uint8, atol 1)": lambda: torch.isclose(
        U8, torch.tensor([8, 5, 1], dtype=torch.uint8), atol=1),
    "isclose(bool, bool)": lambda: torch.isclose(B, torch.tensor([True, True, False])),
    "isclose(int64, int64, rtol 0.5)": lambda: torch.isclose(I64, torch.tensor([3, -3, 3]),
                                                             rtol=0.5),
    "isclose(float16, float16, rtol 1e-3)": lambda: torch.isclose(H, H + 0.001, rtol=1e-3),
    "isclose(float32, float64)": lambda: torch.isclose(F, D),
    "isclose(float32, float32, rtol -1)": lambda: torch.isclose(F, F, rtol=-1.0),
    "equal(int64, float32)": lambda: torch.tensor(torch.equal(I64, I64.float())),
    "equal(float32, float32 of shape [1, 3])": lambda: torch.tensor(torch.equal(F, F[None])),
    "allclose(int32, int32, atol 1)": lambda: torch.tensor(torch.allclose(
        I32, I32 + torch.tensor([1, 0, -1], dtype=torch.int32), atol=1)),
    "allclose(float16, float32)": lambda: torch.tensor(torch.allclose(H, F)),
    "clamp(float32, int64 min)": lambda: torch.clamp(F, torch.tensor([2, 0, 0])),
    "clamp(int32, int64 0-d min, float64 0-d max)": lambda: torch.clamp(
        I32, torch.tensor(0), torch.tensor(5.5, dtype=torch.float64)),
    "atan2(int64, int64)": lambda: torch.atan2(I64, I64.flip(0)),
    "atan2(float32, float64)": lambda: torch.atan2(F, D),
    "atan2(bool, bool)": lambda: torch.atan2(B, B.flip(0)),
    "atan2(int32, float16)": lambda: torch.atan2(I32, H),
    "fmod(int64, int64)": lambda: torch.fmod(DIVIDEND, DIVISOR),
    "remainder(int64, int64)": lambda: torch.remainder(DIVIDEND, DIVISOR),
    "fmod(int32, int32)": lambda: torch.fmod(DIVIDEND.int(), DIVISOR.int()),
    "remainder(int32, int32)": lambda: torch.remainder(DIVIDEND.int(), DIVISOR.int()),
    "fmod(uint8, uint8)": lambda: torch.fmod(U8, torch.tensor([2, 5, 7], dtype=torch.uint8)),
    "remainder(uint8, uint8)": lambda: torch.remainder(U8, torch.tensor([2, 5, 7],
                                                                        dtype=torch.uint8)),
    "fmod(int32, uint8)": lambda: torch.fmod(I32, U8),
    "remainder(int64, int32)": lambda: torch.remainder(DIVIDEND, DIVISOR.int()),
    "fmod(int64, 2)": lambda: torch.fmod(DIVIDEND, 2),
    "remainder(int64, -3)": lambda: torch.remainder(DIVIDEND, -3),
    "fmod(int64, 1.5)": lambda: torch.fmod(DIVIDEND, 1.5),
    "remainder(int64, 1.5)": lambda: torch.remainder(DIVIDEND, 1.5),
    "fmod(float32, int64)": lambda: torch.fmod(F, I64),
    "remainder(float16, float32)": lambda: torch.remainder(H, F),
    "remainder(int64, float64)": lambda: torch.remainder(DIVIDEND[:3], D),
    "fmod(int64, 0)": lambda: torch.fmod(DIVIDEND, 0),
    "remainder(int64, int64 with 0)": lambda: torch.remainder(DIVIDEND, ZERO_DIVISOR),
    "fmod(bool, bool)": lambda: torch.fmod(B, B),
    "maximum(int64, float32)": lambda: torch.maximum(I64, F),
    "minimum(bool, int32)": lambda: torch.minimum(B, I32),
    "where(c, int64, 2.5)": lambda: torch.where(B, I64, 2.5),
    "where(c, int64, 2)": lambda: torch.where(B, I64, 2),
    "where(c, 2.0, int32)": lambda: torch.where(B, 2.0, I32),
    "where(c, float16, float32)": lambda: torch.where(B, H, F),
    "matmul(float32, float64)": lambda: torch.matmul(M32, M64),
    "bmm(float32, float16)": lambda: torch.bmm(M32[None], M64[None].half()),
    "addmm(float32, float32, float64)": lambda: torch.addmm(M32, M32, M64),
    "int64.add_(2.0)": lambda: I64.clone().add_(2.0),
    "int64.mul_(3)": lambda: I64.clone().mul_(3),
    "float16.mul_(2.5)": lambda: H.clone().mul_(2.5),
}


def cpp_dtype(dtype):
    return "k" + {"float32": "Float32", "float64": "Float64", "float16": "Float16",
                  "bfloat16": "BFloat16", "int32": "Int32", "int64": "Int64", "uint8": "UInt8",
                  "bool": "Bool"}[dtype]


def cpp_scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)  # 2 (an int) or 2.0 (a double)


def cpp_double(value):
    if math.isnan(value):
        return "NAN"
    return repr(float(value))


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
            for value in SCALARS:
                x = torch.ones([2] * dim, dtype=t[a])
                scalars.append((a, dim, value, name(torch.result_type(x, value))))
    ops = []
    for case, expression in OP_CASES.items():
        try:
            result = expression()
        except (RuntimeError, NotImplementedError, ValueError):
            ops.append((case, None))
        else:
            ops.append((case, result))
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_promotion_reference.py with PyTorch {torch.__version__}; "
        "do not edit.",
        "// torch.promote_types and torch.result_type for tests/ops/type_promotion_test.cpp.",
        "#include <cmath>",
        "#include <cstdint>",
        "#include <string_view>",
        "#include <vector>",
        "",
        '#include "minidl/core/dtype.h"',
        '#include "minidl/core/scalar.h"',
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
        "  Scalar scalar;",
        "  DType result;",
        "};",
        "",
        "// One expression of tests/ops/promotion_ops_test.cpp: its result's dtype, sizes and",
        "// values (bool as 0 and 1), or that PyTorch raises.",
        "struct PromotionOpReference {",
        "  std::string_view name;",
        "  bool raises;",
        "  DType dtype;",
        "  std::vector<int64_t> sizes;",
        "  std::vector<double> values;",
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
    lines += [f"    {{{cpp_dtype(a)}, {d}, Scalar({cpp_scalar(v)}), {cpp_dtype(r)}}},"
              for a, d, v, r in scalars]
    lines += ["};", "",
              "inline const std::vector<PromotionOpReference> kPromotionOpReferences = {"]
    for case, result in ops:
        if result is None:
            lines.append(f'    {{"{case}", true, kFloat32, {{}}, {{}}}},')
            continue
        sizes = ", ".join(str(s) for s in result.shape)
        values = ", ".join(cpp_double(v) for v in result.double().flatten().tolist())
        lines.append(f'    {{"{case}", false, {cpp_dtype(name(result.dtype))}, {{{sizes}}}, '
                     f"{{{values}}}}},")
    lines += ["};", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as out:
        out.write("\n".join(lines))
    print(f"wrote {len(pairs)} pairs, {len(results)} result types, {len(scalars)} scalar cases, "
          f"{len(ops)} op cases to "
          f"{os.path.normpath(args.output)} (PyTorch {torch.__version__})")


if __name__ == "__main__":
    main()
