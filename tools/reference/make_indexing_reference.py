#!/usr/bin/env python3
"""Writes tests/ops/indexing_reference.h: PyTorch's values and gradients of the scans and
products (cumprod, prod), the vector norm (torch.linalg.vector_norm) and the indexing
ops (gather, scatter, scatter_add, index_add, masked_select), which tests/ops/scan_test.cpp,
tests/ops/vector_norm_test.cpp and tests/ops/indexing_test.cpp carry so that they run without
PyTorch.

    python3 tools/reference/make_indexing_reference.py [--output tests/ops/indexing_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). Inputs are sin(1 + phase + 0.37 i) in float64
(the tests' wiggly(shape, phase)); the scans' input with zeros is written out too. For each
case: the output and the gradients of sum(out * upstream), upstream = wiggly(out.shape, 1.0),
with respect to each floating input, all in float64 and row-major order.
"""
import argparse
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def wiggly(shape, phase=0.0):
    count = 1
    for size in shape:
        count *= size
    i = torch.arange(count, dtype=torch.float64)
    return torch.sin(1.0 + phase + 0.37 * i).reshape(shape)


def with_zeros():
    """[3, 4]: row 0 without zeros, row 1 with one, row 2 with two (columns 0 and 3 too)."""
    x = wiggly((3, 4))
    x[1, 1] = 0.0
    x[2, 0] = 0.0
    x[2, 3] = 0.0
    return x


GATHER_INDEX_DIM0 = [[2, 0, 1, 2], [0, 0, 2, 1]]  # [2, 4] into x [3, 4]
GATHER_INDEX_DIM1 = [[0, 2, 2], [1, 0, 3]]  # [2, 3] into x [3, 4]
SCATTER_ADD_INDEX = [[0, 1, 2, 0], [2, 2, 0, 0]]  # [2, 4] into x [3, 4], src [2, 4]; repeats
SCATTER_INDEX = [[0, 1, 2, 0], [2, 0, 1, 1]]  # [2, 4], no element named twice
INDEX_ADD_INDEX = [2, 0, 2]  # into x [4, 3] along dim 0, source [3, 3]; row 2 twice
INDEX_ADD_ALPHA = 2.5
MASK = [[True, False, True, True]]  # [1, 4], broadcast over x [3, 4]
# The vector norm's orders, by name: over every dim, and over dim 1 with keepdim.
NORM_ORDERS = [("P2", 2.0), ("P1", 1.0), ("PInf", float("inf")), ("PMinusInf", float("-inf")),
               ("P0", 0.0), ("P3", 3.0), ("PHalf", 0.5)]


def case(name, fn, inputs):
    """Runs fn on leaf copies of inputs; returns [(name_suffix, tensor)]."""
    leaves = [t.clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    if out.requires_grad:
        (out * wiggly(tuple(out.shape), 1.0)).sum().backward()
    entries = [(name + "Output", out.detach())]
    for position, leaf in enumerate(leaves):
        suffix = "Grad" if len(leaves) == 1 else ("GradInput", "GradSrc")[position]
        # PyTorch leaves no gradient where there is none to give (the 0-norm): zeros.
        grad = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        entries.append((name + suffix, grad))
    return entries


def cases():
    x = wiggly((3, 4))
    z = with_zeros()
    i64 = lambda v: torch.tensor(v, dtype=torch.int64)
    entries = [("ScanZerosInput", z)]
    # cumsum's values and gradients are the operator table's (tools/reference/make_op_reference.py).
    for dim in (0, 1):
        entries += case(f"CumprodDim{dim}", lambda t, d=dim: torch.cumprod(t, d), [z])
    entries += case("CumprodNoZerosDim1", lambda t: torch.cumprod(t, 1), [x])
    entries += case("ProdDim1Keepdim", lambda t: torch.prod(t, 1, keepdim=True), [z])
    entries += case("ProdDim0", lambda t: torch.prod(t, 0), [z])
    entries += case("ProdAll", lambda t: torch.prod(t), [z[0:2]])
    entries += case("GatherDim0", lambda t: torch.gather(t, 0, i64(GATHER_INDEX_DIM0)), [x])
    entries += case("GatherDim1", lambda t: torch.gather(t, 1, i64(GATHER_INDEX_DIM1)), [x])
    src = wiggly((2, 4), 2.0)  # PyTorch's src gradient needs index's shape
    entries += case("ScatterAdd", lambda t, s: torch.scatter_add(t, 0, i64(SCATTER_ADD_INDEX), s),
                    [x, src])
    entries += case("Scatter", lambda t, s: torch.scatter(t, 0, i64(SCATTER_INDEX), s), [x, src])
    entries += case("IndexAdd",
                    lambda t, s: torch.index_add(t, 0, i64(INDEX_ADD_INDEX), s,
                                                 alpha=INDEX_ADD_ALPHA),
                    [wiggly((4, 3)), wiggly((3, 3), 2.0)])
    entries += case("MaskedSelect", lambda t: torch.masked_select(t, torch.tensor(MASK)), [x])
    for name, order in NORM_ORDERS:
        entries += case(f"Norm{name}All", lambda t, p=order: torch.linalg.vector_norm(t, p), [x])
        entries += case(f"Norm{name}Dim1Keepdim",
                        lambda t, p=order: torch.linalg.vector_norm(t, p, dim=1, keepdim=True),
                        [x])
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "indexing_reference.h"))
    args = parser.parse_args()
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_indexing_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's scans, products and indexing ops, values and gradients (see the script).",
        "",
        "namespace minidl::testing {",
        "",
        "// clang-format off",
    ]
    for name, tensor in cases():
        shape = ", ".join(str(s) for s in tensor.shape)
        values = ", ".join(repr(float(v)) for v in tensor.flatten().tolist())
        lines.append(f"inline constexpr double k{name}[] = {{{values}}};  // [{shape}]")
    lines += ["// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
