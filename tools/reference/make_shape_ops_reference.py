#!/usr/bin/env python3
"""Writes tests/ops/shape_ops_reference.h: PyTorch's values and gradients of einsum,
F.interpolate (every mode, antialias too), F.pad's reflect, replicate and circular modes and
indexing by tensors (x[mask], x[indices], x[:, indices], index_put), which tests/ops/einsum_test.cpp,
tests/ops/interpolate_test.cpp, tests/ops/rearrange_test.cpp and
tests/ops/advanced_indexing_test.cpp carry so that they run without PyTorch.

    python3 tools/reference/make_shape_ops_reference.py [--output tests/ops/shape_ops_reference.h]

Needs PyTorch (2.15.0+cu132, on the CPU, wrote the checked-in file). Inputs are
sin(1 + phase + 0.37 i) in float64 (the tests' wiggly(shape, phase)), operand k of a case with
phase k. For each case: the output and the gradients of sum(out * upstream), upstream =
wiggly(out.shape, 1.0), with respect to each floating input (Grad0, Grad1, ...), all in float64
and row-major order, each with its shape.
"""
import argparse
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def wiggly(shape, phase=0.0):
    count = 1
    for size in shape:
        count *= size
    i = torch.arange(count, dtype=torch.float64)
    return torch.sin(1.0 + phase + 0.37 * i).reshape(shape)


def case(name, fn, shapes):
    """Runs fn on wiggly leaves of the given shapes; returns [(name, tensor)]."""
    leaves = [wiggly(shape, float(k)).requires_grad_() for k, shape in enumerate(shapes)]
    out = fn(*leaves)
    (out * wiggly(tuple(out.shape), 1.0)).sum().backward()
    entries = [(name + "Output", out.detach())]
    for k, leaf in enumerate(leaves):
        grad = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        entries.append((f"{name}Grad{k}", grad))
    return entries


# name, equation, operand shapes
EINSUM_CASES = [
    ("Matmul", "ij,jk->ik", [(3, 4), (4, 5)]),
    ("MatmulImplicit", "ij,jk", [(3, 4), (4, 5)]),
    ("Bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("Attention", "bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("Outer", "i,j->ij", [(3,), (4,)]),
    ("Dot", "i,i->", [(5,)] * 2),
    ("Hadamard", "ij,ij->ij", [(3, 4)] * 2),
    ("Trace", "ii->", [(4, 4)]),
    ("TraceImplicit", "ii", [(4, 4)]),
    ("Diagonal", "ii->i", [(4, 4)]),
    ("BatchDiagonalSum", "bii->b", [(2, 3, 3)]),
    ("Transpose", "ij->ji", [(3, 4)]),
    ("Permute", "ijk->kij", [(2, 3, 4)]),
    ("SumAll", "ij->", [(3, 4)]),
    ("SumRows", "ij->i", [(3, 4)]),
    ("Bilinear", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("EllipsisBroadcast", "...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 5)]),
    ("EllipsisSummed", "...ij->ij", [(2, 3, 4)]),
    ("ImplicitUpperFirst", "bA,Ac", [(2, 3), (3, 4)]),
    ("SizeOneBroadcast", "ij,j->i", [(3, 4), (1,)]),
    ("ThreeWay", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]

# name, input shape, F.interpolate keyword arguments
INTERPOLATE_CASES = [
    ("Nearest2dSize", (2, 2, 3, 4), dict(size=(5, 7), mode="nearest")),
    ("Nearest2dDouble", (1, 2, 3, 4), dict(size=(6, 8), mode="nearest")),
    ("Nearest2dScale", (1, 2, 3, 4), dict(scale_factor=1.7, mode="nearest")),
    ("Nearest2dDown", (1, 2, 5, 7), dict(size=(2, 3), mode="nearest")),
    ("Nearest1dSize", (2, 3, 4), dict(size=(7,), mode="nearest")),
    ("Nearest1dScale", (2, 3, 4), dict(scale_factor=2.5, mode="nearest")),
    ("BilinearSize", (2, 2, 3, 4), dict(size=(5, 7), mode="bilinear", align_corners=False)),
    ("BilinearAlignCorners", (2, 2, 3, 4), dict(size=(5, 7), mode="bilinear",
                                                 align_corners=True)),
    ("BilinearScale", (1, 2, 3, 4), dict(scale_factor=1.7, mode="bilinear")),
    ("BilinearScaleRecomputed", (1, 2, 3, 4), dict(scale_factor=1.7, mode="bilinear",
                                                    recompute_scale_factor=True)),
    ("BilinearDown", (1, 2, 5, 7), dict(size=(2, 3), mode="bilinear")),
    ("BilinearAlignCornersOneRow", (1, 1, 3, 4), dict(size=(1, 6), mode="bilinear",
                                                       align_corners=True)),
    ("Nearest3dSize", (1, 2, 2, 3, 4), dict(size=(3, 5, 3), mode="nearest")),
    ("NearestExact1dSize", (2, 3, 4), dict(size=(7,), mode="nearest-exact")),
    ("NearestExact2dScale", (1, 2, 3, 4), dict(scale_factor=1.7, mode="nearest-exact")),
    ("NearestExact2dDown", (1, 2, 5, 7), dict(size=(2, 3), mode="nearest-exact")),
    ("NearestExact3dSize", (1, 2, 2, 3, 4), dict(size=(3, 5, 3), mode="nearest-exact")),
    ("LinearSize", (2, 3, 4), dict(size=(7,), mode="linear")),
    ("LinearAlignCorners", (2, 3, 4), dict(size=(7,), mode="linear", align_corners=True)),
    ("LinearScaleDown", (1, 2, 9), dict(scale_factor=0.45, mode="linear")),
    ("TrilinearSize", (1, 2, 2, 3, 4), dict(size=(3, 5, 3), mode="trilinear")),
    ("TrilinearAlignCorners", (1, 2, 2, 3, 4), dict(size=(3, 5, 3), mode="trilinear",
                                                   align_corners=True)),
    ("BicubicSize", (2, 2, 3, 4), dict(size=(5, 7), mode="bicubic")),
    ("BicubicAlignCorners", (1, 2, 3, 4), dict(size=(5, 7), mode="bicubic", align_corners=True)),
    ("BicubicScale", (1, 2, 3, 4), dict(scale_factor=1.7, mode="bicubic")),
    ("BicubicDown", (1, 2, 7, 9), dict(size=(3, 4), mode="bicubic")),
    ("Area1dDown", (2, 3, 7), dict(size=(3,), mode="area")),
    ("Area2dDown", (1, 2, 7, 9), dict(size=(3, 4), mode="area")),
    ("Area2dUpScale", (1, 2, 3, 4), dict(scale_factor=1.7, mode="area")),    ("Area3dDown", (1, 2, 5, 6, 7), dict(size=(2, 4, 3), mode="area")),
    ("BilinearAntialiasDown", (1, 2, 7, 9), dict(size=(3, 4), mode="bilinear", antialias=True)),
    ("BilinearAntialiasScale", (1, 2, 9, 8), dict(scale_factor=0.3, mode="bilinear",
                                                   antialias=True)),
    ("BilinearAntialiasAlignCorners", (1, 2, 7, 9), dict(size=(3, 4), mode="bilinear",
                                                          antialias=True, align_corners=True)),
    ("BilinearAntialiasUp", (1, 2, 3, 4), dict(size=(5, 7), mode="bilinear", antialias=True)),
    ("BicubicAntialiasDown", (1, 2, 7, 9), dict(size=(3, 4), mode="bicubic", antialias=True)),
    ("BicubicAntialiasMixed", (1, 2, 9, 4), dict(size=(4, 6), mode="bicubic", antialias=True)),
]

# name, input shape, pad, mode
PAD_CASES = [
    ("Reflect2d", (1, 2, 3, 4), (2, 1, 1, 2), "reflect"),
    ("Reflect1dNegative", (2, 5), (-1, 3), "reflect"),
    ("Replicate2d", (1, 2, 3, 4), (3, 1, -1, 2), "replicate"),
    ("Replicate3d", (1, 2, 3, 4), (1, 1, 1, 0, 1, 1), "replicate"),
    ("Circular2d", (2, 3, 4), (4, 1, 3, 2), "circular"),
    ("Circular1dNegative", (1, 2, 5), (-2, 3), "circular"),
]

MASK_2D = [[True, False, True, True], [False, False, False, False], [False, True, True, False]]
MASK_ROWS = [True, False, True]
INDEX = [[2, 0], [-1, 2]]
ACCUMULATE_INDEX = [0, 2, 0]


def index_cases():
    mask = torch.tensor(MASK_2D)
    rows = torch.tensor(MASK_ROWS)
    index = torch.tensor(INDEX)
    accumulate_index = torch.tensor(ACCUMULATE_INDEX)
    entries = []
    entries += case("IndexMask", lambda x: x[mask], [(3, 4)])
    entries += case("IndexMaskRows", lambda x: x[rows], [(3, 4)])
    entries += case("IndexInt", lambda x: x[index], [(3, 4)])
    entries += case("IndexPutMaskRowValues",
                    lambda x, v: torch.index_put(x, (rows,), v), [(3, 4), (4,)])
    entries += case("IndexPutMaskValues",
                    lambda x, v: torch.index_put(x, (mask,), v), [(3, 4), (5,)])
    entries += case("IndexPutMaskAccumulate",
                    lambda x, v: torch.index_put(x, (mask,), v, accumulate=True),
                    [(3, 4), (5,)])
    entries += case("IndexPutIntAccumulate",
                    lambda x, v: torch.index_put(x, (accumulate_index,), v, accumulate=True),
                    [(3, 4), (3, 4)])
    entries += case("IndexPutInt",
                    lambda x, v: torch.index_put(x, (index,), v), [(3, 4), (2, 2, 4)])
    return entries + mixed_index_cases()


# Tensor indices among other indices, and several tensor indices (LibTorch's x.index({...})).
COLUMNS = [[3, 0], [-2, 1]]
ROW_PICKS = [2, 0, 1]
DEPTH_PICKS = [4, -5, 3]
TARGETS = [5, 0, 3, 3]
MASK_3X4 = [[True, False, False, True], [False, True, True, False], [True, False, False, False]]
ACCUMULATE_ROWS = [0, 2, 0, 1]
ACCUMULATE_COLUMNS = [1, 3, 1, 1]


def put(x, index, v, accumulate=False):
    """x with x[index] = v (accumulate: +=), out of place, differentiable in x and v."""
    y = x.clone()
    if accumulate:
        y[index] += v
    else:
        y[index] = v
    return y


def mixed_index_cases():
    columns = torch.tensor(COLUMNS)
    row_picks = torch.tensor(ROW_PICKS)
    depth_picks = torch.tensor(DEPTH_PICKS)
    targets = torch.tensor(TARGETS)
    mask = torch.tensor(MASK_3X4)
    entries = []
    entries += case("IndexSliceTensor", lambda x: x[:, columns], [(3, 4, 5)])
    entries += case("IndexTensorSliceTensor", lambda x: x[row_picks, :, depth_picks], [(3, 4, 5)])
    entries += case("IndexIntSliceTensor", lambda x: x[1, :, depth_picks], [(3, 4, 5)])
    entries += case("IndexRowsAndTargets", lambda x: x[torch.arange(4), targets], [(4, 6)])
    entries += case("IndexBroadcastTensors",
                    lambda x: x[row_picks.view(3, 1), columns[0].view(1, 2)], [(3, 4, 5)])
    entries += case("IndexTensorNoneTensor",
                    lambda x: x[row_picks, None, row_picks + 1], [(3, 4, 5)])
    entries += case("IndexSliceMask", lambda x: x[:, mask], [(2, 3, 4)])
    entries += case("IndexEllipsisTensor", lambda x: x[..., columns], [(2, 3, 4)])
    entries += case("IndexPutSliceTensor",
                    lambda x, v: put(x, (slice(None), columns), v), [(3, 4, 5), (2, 2, 5)])
    entries += case("IndexPutIntSliceTensor",
                    lambda x, v: put(x, (1, slice(None), depth_picks), v), [(3, 4, 5), (3,)])
    entries += case("IndexPutTensorsAccumulate",
                    lambda x, v: torch.index_put(
                        x, (torch.tensor(ACCUMULATE_ROWS), torch.tensor(ACCUMULATE_COLUMNS)), v,
                        accumulate=True),
                    [(3, 4), (4,)])
    return entries


def cases():
    entries = []
    for name, equation, shapes in EINSUM_CASES:
        entries += case("Einsum" + name, lambda *ops, e=equation: torch.einsum(e, *ops), shapes)
    for name, shape, kwargs in INTERPOLATE_CASES:
        entries += case("Interpolate" + name, lambda x, k=kwargs: F.interpolate(x, **k), [shape])
    for name, shape, pad, mode in PAD_CASES:
        entries += case("Pad" + name, lambda x, p=pad, m=mode: F.pad(x, p, mode=m), [shape])
    return entries + index_cases()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "shape_ops_reference.h"))
    args = parser.parse_args()
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_shape_ops_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's einsum, interpolate, pad and tensor-indexing values and gradients (see the",
        "// script). Each entry: the values in row-major order and the shape.",
        "#include <cstdint>",
        "#include <vector>",
        "",
        "#include \"reference_entry.h\"",
        "",
        "namespace minidl::testing {",
        "",
        "// clang-format off",
    ]
    for name, tensor in cases():
        shape = ", ".join(str(s) for s in tensor.shape)
        values = ", ".join(repr(float(v)) for v in tensor.flatten().tolist())
        lines.append(f"inline const ReferenceEntry k{name}{{{{{values}}}, {{{shape}}}}};")
    lines += ["// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
