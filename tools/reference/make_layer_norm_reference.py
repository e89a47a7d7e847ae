#!/usr/bin/env python3
"""Writes tests/ops/layer_norm_reference.h: PyTorch's layer_norm values (output, and the
gradients of input, weight and bias), which tests/ops/layer_norm_test.cpp carries so that it
runs without PyTorch.

    python3 tools/reference/make_layer_norm_reference.py [--output tests/ops/layer_norm_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). Each case: an input of some shape and dtype (its
values drawn with a fixed seed, then rounded to the dtype, and written as those exact values),
weight and bias of normalized_shape (either may be absent; float32 for 16-bit input, as under
mixed precision), an upstream gradient of the input's dtype, and from PyTorch on the CPU the
output and the gradients of sum(output * upstream), each as PyTorch's dtype holds them. For
16-bit input the weight and bias gradients are PyTorch's in float64 of the same rounded values
instead: PyTorch's CPU kernel rounds them to the input's dtype (bfloat16 sums), where minidl sums
in float32 as PyTorch's CUDA kernel does. Adding a case: a line in CASES below.
"""
import argparse
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}

# what, input sizes, normalized dims (the last ones), dtype, parameter dtype, weight, bias, eps
CASES = [
    ("rows of 6, affine", [4, 6], 1, "float32", "float32", True, True, 1e-5),
    ("normalized_shape of 2 dims", [2, 3, 4, 5], 2, "float32", "float32", True, True, 1e-5),
    ("no affine", [3, 8], 1, "float32", "float32", False, False, 1e-5),
    ("weight without bias, eps 0.1", [2, 2, 7], 1, "float32", "float32", True, False, 0.1),
    ("long rows of 300", [3, 300], 1, "float32", "float32", True, True, 1e-5),
    ("float64", [5, 7], 1, "float64", "float64", True, True, 1e-5),
    ("bfloat16, float32 parameters", [2, 3, 16], 1, "bfloat16", "float32", True, True, 1e-5),
    ("bfloat16, bfloat16 parameters", [4, 12], 1, "bfloat16", "bfloat16", True, True, 1e-5),
    ("float16, float32 parameters", [4, 2, 5], 2, "float16", "float32", True, True, 1e-5),
]


def values(t):
    return [float(v) for v in t.detach().to(torch.float64).reshape(-1).tolist()]


def array(name, data):
    return "inline constexpr double %s[] = {%s};" % (name, ", ".join(repr(v) for v in data))


def case(index, what, sizes, normalized_dims, dtype, parameter_dtype, has_weight, has_bias, eps):
    generator = torch.Generator().manual_seed(1000 + index)
    dtype_t, parameter_t = DTYPES[dtype], DTYPES[parameter_dtype]
    normalized_shape = sizes[-normalized_dims:]
    # Rows of different means and spreads, so each row's statistics matter.
    x = torch.randn(sizes, generator=generator, dtype=torch.float64) * 2.0 + 0.75
    x = x.to(dtype_t).requires_grad_()
    weight = (torch.randn(normalized_shape, generator=generator, dtype=torch.float64) * 0.5 + 1.0)
    weight = weight.to(parameter_t).requires_grad_() if has_weight else None
    bias = torch.randn(normalized_shape, generator=generator, dtype=torch.float64) * 0.5
    bias = bias.to(parameter_t).requires_grad_() if has_bias else None
    upstream = torch.randn(sizes, generator=generator, dtype=torch.float64).to(dtype_t)
    y = F.layer_norm(x, normalized_shape, weight, bias, eps)
    assert y.dtype == dtype_t, (what, y.dtype)
    y.backward(upstream)
    grad_weight = weight.grad if has_weight else None
    grad_bias = bias.grad if has_bias else None
    if dtype in ("bfloat16", "float16"):
        leaves = [t.detach().to(torch.float64).requires_grad_() if t is not None else None
                  for t in (x, weight, bias)]
        F.layer_norm(leaves[0], normalized_shape, leaves[1], leaves[2], eps).backward(
            upstream.to(torch.float64))
        grad_weight = leaves[1].grad if has_weight else None
        grad_bias = leaves[2].grad if has_bias else None
    prefix = "kLayerNormCase%d" % index
    lines = [
        array(prefix + "Input", values(x)),
        array(prefix + "Weight", values(weight) if has_weight else [0.0]),
        array(prefix + "Bias", values(bias) if has_bias else [0.0]),
        array(prefix + "Upstream", values(upstream)),
        array(prefix + "Output", values(y)),
        array(prefix + "GradInput", values(x.grad)),
        array(prefix + "GradWeight", values(grad_weight) if has_weight else [0.0]),
        array(prefix + "GradBias", values(grad_bias) if has_bias else [0.0]),
    ]
    padded = sizes + [0] * (4 - len(sizes))
    row = (
        '  {"%s", "%s", "%s", {%s}, %d, %d, %s, %s, %r,\n'
        "   %sInput, %sWeight, %sBias, %sUpstream,\n"
        "   %sOutput, %sGradInput, %sGradWeight, %sGradBias},"
        % (what, dtype, parameter_dtype, ", ".join(str(s) for s in padded), len(sizes),
           normalized_dims, "true" if has_weight else "false", "true" if has_bias else "false",
           eps, *([prefix] * 8)))
    return lines, row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "ops",
                                                         "layer_norm_reference.h"))
    args = parser.parse_args()
    arrays, rows = [], []
    for index, spec in enumerate(CASES):
        lines, row = case(index, *spec)
        arrays.extend(lines)
        rows.append(row)
    out = [
        "#pragma once",
        "// Written by tools/reference/make_layer_norm_reference.py with PyTorch %s; do not edit." %
        torch.__version__,
        "// PyTorch's layer_norm values (tests/ops/layer_norm_test.cpp): see the script.",
        "#include <cstdint>",
        "",
        "namespace minidl::testing {",
        "",
        "struct LayerNormReference {",
        "  const char* what;",
        "  const char* dtype;            // the input's, the output's and the upstream's",
        "  const char* parameter_dtype;  // weight's and bias's",
        "  int64_t sizes[4];             // the input's, the first `dim` of them",
        "  int dim;",
        "  int normalized_dims;  // normalized_shape: the last normalized_dims sizes",
        "  bool has_weight, has_bias;",
        "  double eps;",
        "  // Row-major values, exact in their dtype (weight and bias: one 0 when absent).",
        "  const double* input;",
        "  const double* weight;",
        "  const double* bias;",
        "  const double* upstream;",
        "  // PyTorch's (CPU): output, and the gradients of sum(output * upstream); for 16-bit",
        "  // input, grad_weight and grad_bias in float64 (see the script).",
        "  const double* output;",
        "  const double* grad_input;",
        "  const double* grad_weight;",
        "  const double* grad_bias;",
        "};",
        "",
        "// clang-format off",
        *arrays,
        "",
        "inline constexpr LayerNormReference kLayerNormReferences[] = {",
        *rows,
        "};",
        "// clang-format on",
        "",
        "}  // namespace minidl::testing",
        "",
    ]
    with open(args.output, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
