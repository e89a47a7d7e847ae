#!/usr/bin/env python3
"""Writes tests/core/print_reference.h: PyTorch's str() of a set of tensors, which
tests/core/tensor_print_test.cpp compares with minidl's Tensor::str() character for character.

    python3 tools/reference/make_print_reference.py [--output tests/core/print_reference.h]

Needs PyTorch (2.15 wrote the checked-in file), with its default print options (precision 4,
threshold 1000, edgeitems 3, linewidth 80). Each case records the dtype, the shape and the
values (each as the double its dtype holds, so the C++ side builds the same tensor), or, for the
large summarised cases, `start + i * step` for the i-th element with an exactly representable
start and step.
"""
import argparse
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
NAN, INF = float("nan"), float("inf")

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}

# name, dtype, shape, values (row-major) or (start, step) for a generated range, requires_grad
CASES = [
    ("fractions", "float32", [3], [1.5, 2.25, -3.125], False),
    ("rounded", "float32", [3], [0.1, 2.0 / 3.0, 12.34567], False),
    ("integer_valued", "float32", [3], [1.0, 2.0, 30.0], False),
    ("all_zero", "float32", [3], [0.0, 0.0, 0.0], False),
    ("negative_zero", "float32", [2], [-0.0, 1.0], False),
    ("large_integers", "float32", [2], [1.0e9, 2.0], False),
    ("large", "float64", [3], [1.5e8, 2.5, -3.0], False),
    ("tiny", "float32", [2], [1.0e-5, 0.5], False),
    ("wide_ratio", "float32", [3], [0.001, 10.0, 2000.0], False),
    ("negative", "float32", [4], [-1.5, 2.0, -0.25, 7.0], False),
    ("nonfinite_integers", "float32", [4], [NAN, INF, -INF, 1.0], False),
    ("nonfinite_fractions", "float32", [3], [NAN, 1.5, -INF], False),
    ("all_nan", "float32", [2], [NAN, NAN], False),
    ("nonfinite_sci", "float64", [3], [NAN, 1.0e-7, 3.0], False),
    ("int64", "int64", [3], [1, -20, 300], False),
    ("int32", "int32", [2, 2], [7, -8, 1000, 0], False),
    ("uint8", "uint8", [3], [0, 255, 17], False),
    ("bool", "bool", [2, 2], [True, False, False, True], False),
    ("matrix", "float32", [3, 4], [(i - 5) * 0.75 for i in range(12)], False),
    ("matrix_sci", "float32", [2, 3], [1.0e-6, -2.5, 3.0e4, 4.0, 0.0, -6.0e-3], False),
    ("cube", "float32", [2, 3, 4], [i * 0.5 - 3.0 for i in range(24)], False),
    ("four_d_ints", "int64", [2, 2, 1, 3], list(range(-6, 6)), False),
    ("scalar", "float32", [], [3.5], False),
    ("scalar_integer", "float32", [], [2.0], False),
    ("scalar_int64", "int64", [], [7], False),
    ("empty", "float32", [0], [], False),
    ("empty_matrix", "float32", [0, 3], [], False),
    ("empty_int64", "int64", [0], [], False),
    ("empty_float64_3d", "float64", [2, 0, 3], [], False),
    ("float64", "float64", [2], [1.0, 0.125], False),
    ("float16", "float16", [3], [0.1, 1.5, -2.0], False),
    ("bfloat16", "bfloat16", [2, 2], [0.1, 1.5, -2.0, 100.0], False),
    ("requires_grad", "float32", [2], [1.0, 2.5], True),
    ("requires_grad_float64", "float64", [2], [1.0, 2.5], True),
    ("wrapped_row", "float32", [30], [i * 0.25 - 2.0 for i in range(30)], False),
    ("wrapped_sci_row", "float64", [20], [(i + 1) * 1.0e-5 for i in range(20)], False),
    ("wrapped_suffix", "float64", [11], [i * 1.25 for i in range(11)], False),
    ("wrapped_rows", "int64", [3, 25], [i * 37 - 900 for i in range(75)], False),
    ("summarized_vector", "float32", [2000], (0.0, 0.5), False),
    ("summarized_vector_int", "int64", [1001], (-500.0, 1.0), False),
    ("summarized_matrix", "float32", [40, 50], (-1000.0, 1.0), False),
    ("summarized_matrix_sci", "float64", [40, 30], (0.0, 0.25), False),
    ("summarized_rows_only", "float32", [500, 4], (0.0, 1.0), False),
    ("summarized_cube", "int32", [12, 10, 10], (0.0, 1.0), False),
]


def cpp_double(value):
    if math.isnan(value):
        return "kNaN"
    if math.isinf(value):
        return "kInf" if value > 0 else "-kInf"
    return repr(float(value))


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def build(dtype, shape, values):
    if isinstance(values, tuple):
        start, step = values
        n = math.prod(shape)
        values = [start + i * step for i in range(n)]
    return torch.tensor(values, dtype=torch.float64).reshape(shape).to(DTYPES[dtype])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "core",
                                                         "print_reference.h"))
    args = parser.parse_args()
    torch.set_printoptions(profile="default")
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_print_reference.py with PyTorch {torch.__version__}; "
        "do not edit.",
        "// PyTorch's str() of each tensor, for tests/core/tensor_print_test.cpp: see the script.",
        "#include <cstdint>",
        "#include <limits>",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "struct PrintReference {",
        "  const char* name;",
        "  const char* dtype;  // as dtype_name()",
        "  std::vector<int64_t> shape;",
        "  std::vector<double> values;  // row-major; empty for a generated range",
        "  double start, step;          // a generated range: element i is start + i * step",
        "  bool requires_grad;",
        "  const char* expected;  // PyTorch's str()",
        "};",
        "",
        "inline const std::vector<PrintReference>& print_references() {",
        "  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();",
        "  constexpr double kInf = std::numeric_limits<double>::infinity();",
        "  static const std::vector<PrintReference> references = {",
    ]
    for name, dtype, shape, values, requires_grad in CASES:
        tensor = build(dtype, shape, values)
        if requires_grad:
            tensor.requires_grad_(True)
        generated = isinstance(values, tuple)
        stored = [] if generated else tensor.detach().double().flatten().tolist()
        start, step = values if generated else (0.0, 0.0)
        lines.append(
            f'      {{"{name}", "{dtype}", {{{", ".join(str(s) for s in shape)}}}, '
            f'{{{", ".join(cpp_double(v) for v in stored)}}}, {cpp_double(start)}, '
            f'{cpp_double(step)}, {"true" if requires_grad else "false"},')
        lines.append(f"       {cpp_string(str(tensor))}}},")
    lines += ["  };", "  return references;", "}", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as out:
        out.write("\n".join(lines))
    print(f"wrote {len(CASES)} cases to {os.path.normpath(args.output)} "
          f"(PyTorch {torch.__version__})")


if __name__ == "__main__":
    main()
