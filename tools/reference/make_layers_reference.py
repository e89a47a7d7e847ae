#!/usr/bin/env python3
"""Writes tests/nn/layers_reference.h: PyTorch's values for conv1d, conv_transpose2d, group_norm
and BatchNorm1d's batch_norm in training (the output, and the gradients of input, weight and bias), which
tests/nn/layers_reference_test.cpp carries so that it runs without PyTorch.

    python3 tools/reference/make_layers_reference.py [--output tests/nn/layers_reference.h]

Needs PyTorch (the version that wrote the checked-in file is in its first lines; 2.15 did). Each
case: an input, a weight and (unless absent) a bias of some shapes and dtype (values drawn with a
fixed seed, rounded to the dtype, and written as those exact values), an upstream gradient of the
output's shape, and from PyTorch on the CPU the output and the gradients of
sum(output * upstream). For 16-bit group_norm input the weight and bias are float32 (as under
mixed precision) and the reference is PyTorch's in float64 of the same rounded values: minidl
computes in float32 and rounds once, PyTorch's CPU kernel rounds some sums to 16 bits. Adding a
case: a line in CASES below.
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

# what, op, dtype, input sizes, weight sizes, bias, geometry
# (conv1d: stride, padding, dilation, groups; conv_transpose2d: stride, padding, output_padding,
# groups, dilation, each pair (h, w); group_norm: num_groups, eps; batch_norm, as BatchNorm1d runs
# it in training: eps)
CASES = [
    ("conv1d, 3 -> 4 channels, kernel 3", "conv1d", "float32", [2, 3, 7], [4, 3, 3], True,
     dict(stride=1, padding=0, dilation=1, groups=1)),
    ("conv1d, stride 2, padding 1, dilation 2, groups 2", "conv1d", "float64", [2, 4, 9],
     [6, 2, 3], True, dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv1d, no bias, padding 2", "conv1d", "float32", [1, 2, 5], [3, 2, 2], False,
     dict(stride=1, padding=2, dilation=1, groups=1)),
    ("conv_transpose2d, 3 -> 2 channels, kernel 3", "conv_transpose2d", "float32", [2, 3, 4, 5],
     [3, 2, 3, 3], True,
     dict(stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1))),
    ("conv_transpose2d, stride 2, padding 1, output_padding 1, groups 2", "conv_transpose2d",
     "float64", [2, 4, 3, 3], [4, 3, 3, 3], True,
     dict(stride=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=2, dilation=(1, 1))),
    ("conv_transpose2d, output_padding above a stride of 1 under dilation 2, no bias",
     "conv_transpose2d", "float32", [2, 2, 3, 4], [2, 3, 2, 3], False,
     dict(stride=(2, 1), padding=(0, 1), output_padding=(1, 1), groups=1, dilation=(1, 2))),
    ("conv_transpose2d, stride 3, kernel 2", "conv_transpose2d", "float64", [1, 2, 3, 4],
     [2, 4, 2, 2], True,
     dict(stride=(3, 3), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1))),
    ("group_norm, 6 channels in 3 groups", "group_norm", "float32", [2, 6, 4, 5], [6], True,
     dict(num_groups=3, eps=1e-5)),
    ("group_norm, [N, C] in 2 groups", "group_norm", "float64", [3, 4], [4], True,
     dict(num_groups=2, eps=1e-5)),
    ("group_norm, no affine, eps 1e-3", "group_norm", "float32", [2, 8, 10], None, False,
     dict(num_groups=4, eps=1e-3)),
    ("group_norm, rank 5, one group", "group_norm", "float64", [2, 4, 3, 2, 2], [4], True,
     dict(num_groups=1, eps=1e-5)),
    ("group_norm, bfloat16, float32 parameters", "group_norm", "bfloat16", [2, 4, 3, 3], [4],
     True, dict(num_groups=2, eps=1e-5)),
    ("batch_norm in training, [N, C]", "batch_norm", "float32", [8, 3], [3], True,
     dict(eps=1e-5)),
    ("batch_norm in training, [N, C, L]", "batch_norm", "float64", [4, 3, 6], [3], True,
     dict(eps=1e-3)),
]


def values(t):
    return [float(v) for v in t.detach().to(torch.float64).reshape(-1).tolist()]


def array(name, data):
    return "inline constexpr double %s[] = {%s};" % (name, ", ".join(repr(v) for v in data))


def run(op, x, weight, bias, geometry):
    if op == "conv1d":
        return F.conv1d(x, weight, bias, **geometry)
    if op == "conv_transpose2d":
        return F.conv_transpose2d(x, weight, bias, **geometry)
    if op == "batch_norm":
        return F.batch_norm(x, None, None, weight, bias, training=True, eps=geometry["eps"])
    return F.group_norm(x, geometry["num_groups"], weight, bias, geometry["eps"])


def pair(geometry, name, default):
    value = geometry.get(name, default)
    return value if isinstance(value, tuple) else (value, value)


def sizes_list(sizes):
    padded = list(sizes) + [0] * (5 - len(sizes))
    return "{%s}, %d" % (", ".join(str(s) for s in padded), len(sizes))


def case(index, what, op, dtype, input_sizes, weight_sizes, has_bias, geometry):
    generator = torch.Generator().manual_seed(2000 + index)
    dtype_t = DTYPES[dtype]
    sixteen_bit = dtype in ("bfloat16", "float16")
    parameter_t = torch.float32 if sixteen_bit else dtype_t
    x = (torch.randn(input_sizes, generator=generator, dtype=torch.float64) * 1.5 + 0.5)
    x = x.to(dtype_t).requires_grad_()
    weight = None
    if weight_sizes is not None:
        weight = torch.randn(weight_sizes, generator=generator, dtype=torch.float64) * 0.5
        if op in ("group_norm", "batch_norm"):
            weight = weight + 1.0
        weight = weight.to(parameter_t).requires_grad_()
    bias = None
    if has_bias:
        bias_size = weight_sizes[0] if op != "conv_transpose2d" else (
            weight_sizes[1] * geometry["groups"])
        bias = torch.randn([bias_size], generator=generator, dtype=torch.float64) * 0.5
        bias = bias.to(parameter_t).requires_grad_()
    y = run(op, x, weight, bias, geometry)
    upstream = torch.randn(y.shape, generator=generator, dtype=torch.float64).to(dtype_t)
    y.backward(upstream)
    grads = [x.grad, weight.grad if weight is not None else None,
             bias.grad if bias is not None else None]
    if sixteen_bit:
        leaves = [t.detach().to(torch.float64).requires_grad_() if t is not None else None
                  for t in (x, weight, bias)]
        run(op, *leaves, geometry).backward(upstream.to(torch.float64))
        grads = [x.grad] + [t.grad if t is not None else None for t in leaves[1:]]
    prefix = "kLayersCase%d" % index
    lines = [
        array(prefix + "Input", values(x)),
        array(prefix + "Weight", values(weight) if weight is not None else [0.0]),
        array(prefix + "Bias", values(bias) if bias is not None else [0.0]),
        array(prefix + "Upstream", values(upstream)),
        array(prefix + "Output", values(y)),
        array(prefix + "GradInput", values(grads[0])),
        array(prefix + "GradWeight", values(grads[1]) if weight is not None else [0.0]),
        array(prefix + "GradBias", values(grads[2]) if bias is not None else [0.0]),
    ]
    stride, padding = pair(geometry, "stride", 1), pair(geometry, "padding", 0)
    output_padding, dilation = pair(geometry, "output_padding", 0), pair(geometry, "dilation", 1)
    row = (
        '  {"%s", "%s", "%s", %s, %s, %s, %s,\n'
        "   {%d, %d}, {%d, %d}, {%d, %d}, {%d, %d}, %d, %d, %r,\n"
        "   %sInput, %sWeight, %sBias, %sUpstream,\n"
        "   %sOutput, %sGradInput, %sGradWeight, %sGradBias},"
        % (what, op, dtype, sizes_list(input_sizes),
           sizes_list(weight_sizes if weight_sizes is not None else []),
           "true" if has_bias else "false", sizes_list(y.shape), *stride, *padding,
           *output_padding, *dilation, geometry.get("groups", 1), geometry.get("num_groups", 0),
           geometry.get("eps", 0.0), *([prefix] * 8)))
    return lines, row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "nn",
                                                         "layers_reference.h"))
    args = parser.parse_args()
    arrays, rows = [], []
    for index, spec in enumerate(CASES):
        lines, row = case(index, *spec)
        arrays.extend(lines)
        rows.append(row)
    out = [
        "#pragma once",
        "// Written by tools/reference/make_layers_reference.py with PyTorch %s; do not edit." %
        torch.__version__,
        "// PyTorch's conv1d, conv_transpose2d, group_norm and batch_norm values",
        "// (tests/nn/layers_reference_test.cpp): see the script.",
        "#include <cstdint>",
        "",
        "namespace minidl::testing {",
        "",
        "struct LayersReference {",
        "  const char* what;",
        "  const char* op;     // conv1d, conv_transpose2d, group_norm or batch_norm (training)",
        "  const char* dtype;  // the input's, the output's and the upstream's",
        "  // Sizes, the first `dim` of each; a group_norm without affine has no weight (dim 0).",
        "  int64_t input_sizes[5];",
        "  int input_dim;",
        "  int64_t weight_sizes[5];",
        "  int weight_dim;",
        "  bool has_bias;",
        "  int64_t output_sizes[5];",
        "  int output_dim;",
        "  // The geometry, (h, w) pairs (conv1d uses the first of each); group_norm's num_groups",
        "  // and eps (batch_norm's too).",
        "  int64_t stride[2], padding[2], output_padding[2], dilation[2];",
        "  int64_t groups;",
        "  int64_t num_groups;",
        "  double eps;",
        "  // Row-major values, exact in their dtype (float32 parameters for 16-bit input; one 0",
        "  // when absent).",
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
        "inline constexpr LayersReference kLayersReferences[] = {",
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
