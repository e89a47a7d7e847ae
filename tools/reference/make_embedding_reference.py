#!/usr/bin/env python3
"""Writes tests/ops/embedding_reference.h: PyTorch's F.embedding values and weight gradients,
which tests/ops/embedding_test.cpp carries so that it runs without PyTorch.

    python3 tools/reference/make_embedding_reference.py [--output tests/ops/embedding_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). The weight [5, 3] holds sin(1 + 0.37 i) and the
upstream gradient [2, 3, 3] sin(2 + 0.37 i) (the tests' wiggly(shape) and wiggly(shape, 1.0)),
in float64; the indices [[4, 0, 4], [2, 4, 1]] repeat row 4 three times and never name row 3.
For each padding_idx (none, 4, -5, i.e. row 0): the output and the gradient of
sum(out * upstream) with respect to the weight, in float64.
"""
import argparse
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
INDICES = [[4, 0, 4], [2, 4, 1]]
WEIGHT_SHAPE = (5, 3)
CASES = [("none", None), ("row_4", 4), ("minus_5", -5)]


def wiggly(shape, phase):
    count = 1
    for size in shape:
        count *= size
    i = torch.arange(count, dtype=torch.float64)
    return torch.sin(1.0 + phase + 0.37 * i).reshape(shape)


def numbers(tensor):
    return "{" + ", ".join(repr(float(v)) for v in tensor.flatten().tolist()) + "}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "embedding_reference.h"))
    args = parser.parse_args()
    indices = torch.tensor(INDICES, dtype=torch.int64)
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_embedding_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's F.embedding values and weight gradients (see the script).",
        "#include <cstdint>",
        "",
        "namespace minidl::testing {",
        "",
        "struct EmbeddingReference {",
        "  const char* name;",
        "  bool has_padding_idx;",
        "  int64_t padding_idx;",
        f"  double output[{indices.numel() * WEIGHT_SHAPE[1]}];       // [2, 3, 3]",
        f"  double weight_grad[{WEIGHT_SHAPE[0] * WEIGHT_SHAPE[1]}];  // [5, 3]",
        "};",
        "",
        "// clang-format off",
        "inline constexpr EmbeddingReference kEmbeddingReferences[] = {",
    ]
    for name, padding_idx in CASES:
        weight = wiggly(WEIGHT_SHAPE, 0.0).requires_grad_()
        out = F.embedding(indices, weight, padding_idx=padding_idx)
        upstream = wiggly(tuple(out.shape), 1.0)
        (out * upstream).sum().backward()
        lines.append(f'  {{"{name}", {"true" if padding_idx is not None else "false"}, '
                     f"{padding_idx if padding_idx is not None else 0},")
        lines.append(f"   {numbers(out.detach())},")
        lines.append(f"   {numbers(weight.grad)}}},")
    lines += ["};", "// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
