#!/usr/bin/env python3
"""Writes tests/core/factory_reference.h: PyTorch's linspace, logspace and eye values for
tests/core/factories_test.cpp, which the test carries so that it runs without PyTorch.

    python3 tools/reference/make_factory_reference.py [--output tests/core/factory_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). Each case runs on the CPU and records every
value exactly (repr of the double the dtype's value converts to). minidl's factories must
match these bit for bit: PyTorch computes linspace from both ends with a fused multiply-add
in the dtype's arithmetic (core/factories.h).
"""
import argparse
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
}

LINSPACE_RANGES = [(0.0, 1.0, 7), (-3.3, 7.1, 50), (0.1, 0.9, 33), (-1.0, 1.0, 1000),
                   (2.5, -7.25, 101), (0.001, 3.7, 257), (0.0, 1.0, 2), (5.0, 5.0, 3),
                   (4.0, 9.0, 1), (-2.0, 3.0, 0), (-10.0, 17.0, 12)]
LINSPACE_CASES = [(dtype, *r) for dtype in ("float32", "float64") for r in LINSPACE_RANGES] + [
    (dtype, *r) for dtype in ("bfloat16", "float16", "int64", "int32")
    for r in [(0.0, 1.0, 7), (-3.3, 7.1, 50), (2.5, -7.25, 101), (-10.0, 17.0, 12)]]
# dtype, start, end, steps, base
LOGSPACE_CASES = [
    ("float32", -2.0, 3.0, 11, 10.0), ("float32", 0.5, -4.5, 37, 2.0),
    ("float64", -2.0, 3.0, 11, 10.0), ("float64", 0.1, 1.7, 23, 3.0),
    ("float32", 1.0, 2.0, 1, 10.0),
]
EYE_CASES = [(3, 3), (2, 5), (4, 1), (0, 2)]


def values_of(t):
    return ", ".join(repr(float(v)) for v in t.double().flatten().tolist())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "core",
                                                         "factory_reference.h"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_factory_reference.py with PyTorch {torch.__version__}; do not "
        "edit.",
        "// PyTorch's linspace, logspace and eye for tests/core/factories_test.cpp: see the "
        "script.",
        "#include <cstdint>",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "struct RangeReference {",
        "  const char* dtype;  // as dtype_name()",
        "  double start, end;",
        "  int64_t steps;",
        "  double base;  // logspace only",
        "  std::vector<double> values;",
        "};",
        "",
        "struct EyeReference {",
        "  int64_t n, m;",
        "  std::vector<double> values;  // row-major",
        "};",
        "",
        "// clang-format off",
        "inline const RangeReference kLinspaceReferences[] = {",
    ]
    for dtype, start, end, steps in LINSPACE_CASES:
        t = torch.linspace(start, end, steps, dtype=DTYPES[dtype])
        lines.append(f'  {{"{dtype}", {start!r}, {end!r}, {steps}, 0.0, {{{values_of(t)}}}}},')
    lines += ["};", "", "inline const RangeReference kLogspaceReferences[] = {"]
    for dtype, start, end, steps, base in LOGSPACE_CASES:
        t = torch.logspace(start, end, steps, base=base, dtype=DTYPES[dtype])
        lines.append(f'  {{"{dtype}", {start!r}, {end!r}, {steps}, {base!r}, {{{values_of(t)}}}}},')
    lines += ["};", "", "inline const EyeReference kEyeReferences[] = {"]
    for n, m in EYE_CASES:
        lines.append(f"  {{{n}, {m}, {{{values_of(torch.eye(n, m))}}}}},")
    lines += ["};", "// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {len(LINSPACE_CASES)} linspace, {len(LOGSPACE_CASES)} logspace and "
          f"{len(EYE_CASES)} eye cases to {args.output}")


if __name__ == "__main__":
    main()
