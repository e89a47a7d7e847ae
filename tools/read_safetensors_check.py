#!/usr/bin/env python3
"""Checks a safetensors file written by minidl with the reference reader (PyPI `safetensors`,
with `numpy`): tensor names, dtypes, shapes and values, and metadata.

Usage:
  read_safetensors_check.py FILE [--expect SIDECAR.json] [--tensor NAME:SHAPE[:VALUES]]...
                                 [--metadata KEY=VALUE]... [--exact-names] [--venv DIR]

  --expect SIDECAR.json   expected contents; the file must hold exactly these tensors:
                            {"tensors": {"fc.bias": {"dtype": "F32", "shape": [3],
                                                     "values": [0.5, 1, -2]}, ...},
                             "metadata": {"format": "pt"}}
                          ("dtype" and "values" are optional; values are row-major)
  --tensor NAME:SHAPE[:VALUES]
                          one expected tensor, e.g. conv1.weight:6x1x5x5, fc3.bias:10,
                          step:scalar (0-d), or fc.bias:3:0.5,1,-2 with values
  --metadata KEY=VALUE    one expected metadata entry
  --exact-names           the file holds no tensors other than the expected ones
  --tolerance T           |actual - expected| <= T for floating-point values (default 0: exact)
  --venv DIR              when safetensors or numpy cannot be imported, create a virtual
                          environment in DIR, pip install them there, and run again under it

Exit status: 0 when every check passed; 1 when one failed (each mismatch is printed);
2 for a usage error or a file the reference reader refuses; 77 when the packages cannot be
imported or installed (CTest's SKIP_RETURN_CODE).
"""

import argparse
import json
import os
import struct
import sys

import python_venv  # tools/python_venv.py: the packages, from a virtual environment if need be

EXIT_MISMATCH = 1
EXIT_USAGE = 2
PACKAGES = ["safetensors", "numpy"]


def fail_usage(message):
    print(f"read_safetensors_check: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def parse_shape(text, where):
    if text in ("", "scalar"):
        return []
    try:
        shape = [int(size) for size in text.split("x")]
    except ValueError:
        fail_usage(f"{where}: shape '{text}' is not sizes separated by 'x' (e.g. 2x3) or 'scalar'")
    if any(size < 0 for size in shape):
        fail_usage(f"{where}: shape '{text}' has a negative size")
    return shape


def parse_tensor_option(text):
    parts = text.split(":", 2)
    if len(parts) < 2 or not parts[0]:
        fail_usage(f"--tensor '{text}': expected NAME:SHAPE or NAME:SHAPE:VALUES")
    expected = {"shape": parse_shape(parts[1], f"--tensor '{text}'")}
    if len(parts) == 3:
        try:
            expected["values"] = [float(v) for v in parts[2].split(",") if v != ""]
        except ValueError:
            fail_usage(f"--tensor '{text}': values must be numbers separated by commas")
    return parts[0], expected


def read_raw_bfloat16(path, name):
    """numpy has no bfloat16: decode the tensor's bytes from the file as float32 (the upper half
    of a float32 is a bfloat16), using the header's offsets."""
    import numpy as np

    with open(path, "rb") as f:
        (header_length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_length))
        begin, end = header[name]["data_offsets"]
        f.seek(8 + header_length + begin)
        raw = np.frombuffer(f.read(end - begin), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32)


def check(path, expected_tensors, expected_metadata, exact_names, tolerance):
    import numpy as np
    from safetensors import safe_open

    problems = []
    try:
        handle = safe_open(path, framework="numpy")
    except Exception as error:  # the reference reader refused the file
        print(f"read_safetensors_check: {path}: the safetensors library cannot open it: {error}",
              file=sys.stderr)
        return EXIT_USAGE
    with handle as f:
        names = set(f.keys())
        metadata = f.metadata() or {}
        for name, expected in expected_tensors.items():
            if name not in names:
                problems.append(f"tensor '{name}' is missing")
                continue
            tensor_slice = f.get_slice(name)
            dtype = tensor_slice.get_dtype()
            shape = list(tensor_slice.get_shape())
            if "dtype" in expected and dtype != expected["dtype"]:
                problems.append(f"tensor '{name}': dtype {dtype}, expected {expected['dtype']}")
            if shape != list(expected["shape"]):
                problems.append(f"tensor '{name}': shape {shape}, expected {expected['shape']}")
                continue
            if "values" not in expected:
                continue
            values = read_raw_bfloat16(path, name) if dtype == "BF16" else f.get_tensor(name)
            actual = np.asarray(values).reshape(-1).astype(np.float64)
            wanted = np.asarray(expected["values"], dtype=np.float64).reshape(-1)
            if actual.shape != wanted.shape:
                problems.append(f"tensor '{name}': {actual.size} values, expected {wanted.size}")
                continue
            wrong = np.nonzero(np.abs(actual - wanted) > tolerance)[0]
            if wrong.size:
                i = int(wrong[0])
                problems.append(f"tensor '{name}': {wrong.size} values differ, first at element "
                                f"{i}: {float(actual[i])!r}, expected {float(wanted[i])!r}")
        if exact_names:
            extra = sorted(names - set(expected_tensors))
            if extra:
                problems.append(f"unexpected tensors: {', '.join(extra)}")
        for key, value in expected_metadata.items():
            if metadata.get(key) != value:
                problems.append(f"metadata '{key}': {metadata.get(key)!r}, expected {value!r}")

    for problem in problems:
        print(f"read_safetensors_check: {path}: {problem}", file=sys.stderr)
    if problems:
        return EXIT_MISMATCH
    print(f"read_safetensors_check: {path}: {len(expected_tensors)} tensors and "
          f"{len(expected_metadata)} metadata entries match ({len(names)} tensors in the file)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--expect", metavar="SIDECAR.json")
    parser.add_argument("--tensor", action="append", default=[], metavar="NAME:SHAPE[:VALUES]")
    parser.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--exact-names", action="store_true")
    parser.add_argument("--tolerance", type=float, default=0.0)
    parser.add_argument("--venv", metavar="DIR")
    args = parser.parse_args()

    python_venv.require(PACKAGES, venv_dir=args.venv)

    expected_tensors, expected_metadata, exact_names = {}, {}, args.exact_names
    if args.expect:
        try:
            with open(args.expect) as sidecar:
                expectations = json.load(sidecar)
        except (OSError, ValueError) as error:
            fail_usage(f"--expect {args.expect}: {error}")
        expected_tensors.update(expectations.get("tensors", {}))
        expected_metadata.update(expectations.get("metadata", {}))
        exact_names = True  # a sidecar describes the whole file
    for text in args.tensor:
        name, expected = parse_tensor_option(text)
        expected_tensors[name] = expected
    for text in args.metadata:
        key, sep, value = text.partition("=")
        if not sep:
            fail_usage(f"--metadata '{text}': expected KEY=VALUE")
        expected_metadata[key] = value
    if not os.path.isfile(args.file):
        fail_usage(f"{args.file}: no such file")
    sys.exit(check(args.file, expected_tensors, expected_metadata, exact_names, args.tolerance))


if __name__ == "__main__":
    main()
