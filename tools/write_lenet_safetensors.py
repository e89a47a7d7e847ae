#!/usr/bin/env python3
"""Writes the state_dict of a LeNet-5 as PyTorch names and shapes it (tools/bench/bench_pytorch.py's
LeNet, which minidl's models::LeNet mirrors) to a safetensors file with the reference writer
(PyPI `safetensors`, through numpy: `safetensors.torch.save_file` produces the same bytes for
float32 tensors, so torch is not needed), and beside it a JSON sidecar of every value. minidl
then loads the file strictly into models::LeNet and compares (CTest
e2e.safetensors_pytorch_lenet_load, tests/nn/safetensors_e2e_reader.cpp).

Usage:
  write_lenet_safetensors.py FILE.safetensors SIDECAR.json [--seed N] [--venv DIR]

  --seed N      seed of the values (default 0): PyTorch's default initialisation, uniform in
                +-1/sqrt(fan_in), drawn by numpy
  --venv DIR    when safetensors or numpy cannot be imported, create a virtual environment in
                DIR, pip install them there, and run again under it

The sidecar has the format of read_safetensors_check.py --expect:
  {"tensors": {"conv1.weight": {"dtype": "F32", "shape": [6, 1, 5, 5], "values": [...]}, ...},
   "metadata": {"format": "pt"}}

Both files are removed first, so a run that skips or fails leaves neither behind.
Exit status: 0 when both were written; 2 for a usage error; 77 when the packages cannot be
imported or installed (CTest's SKIP_RETURN_CODE).
"""

import argparse
import json
import math
import os
import sys

import python_venv  # tools/python_venv.py: the packages, from a virtual environment if need be

PACKAGES = ["safetensors", "numpy"]

# PyTorch's LeNet-5 state_dict, in registration order: conv1 Conv2d(1, 6, 5, padding=2),
# conv2 Conv2d(6, 16, 5), fc1 Linear(400, 120), fc2 Linear(120, 84), fc3 Linear(84, 10).
LENET_STATE_DICT = [
    ("conv1.weight", [6, 1, 5, 5]), ("conv1.bias", [6]),
    ("conv2.weight", [16, 6, 5, 5]), ("conv2.bias", [16]),
    ("fc1.weight", [120, 400]), ("fc1.bias", [120]),
    ("fc2.weight", [84, 120]), ("fc2.bias", [84]),
    ("fc3.weight", [10, 84]), ("fc3.bias", [10]),
]


def lenet_state_dict(seed):
    """name -> float32 array; each layer's weight and bias uniform in +-1/sqrt(fan_in)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tensors = {}
    fan_in = None
    for name, shape in LENET_STATE_DICT:
        if name.endswith(".weight"):
            fan_in = math.prod(shape[1:])
        bound = 1.0 / math.sqrt(fan_in)
        tensors[name] = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    return tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("sidecar")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--venv", metavar="DIR")
    args = parser.parse_args()

    for path in (args.file, args.sidecar):
        if os.path.exists(path):
            os.remove(path)
    python_venv.require(PACKAGES, venv_dir=args.venv)
    from safetensors.numpy import save_file

    tensors = lenet_state_dict(args.seed)
    # As Hugging Face's save_pretrained writes (safetensors.torch.save_file alone writes none):
    # minidl reads the header's metadata and ignores it in nn::load.
    metadata = {"format": "pt"}
    for path in (args.file, args.sidecar):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save_file(tensors, args.file, metadata=metadata)
    sidecar = {
        "tensors": {name: {"dtype": "F32", "shape": list(array.shape),
                           "values": array.astype("float64").reshape(-1).tolist()}
                    for name, array in tensors.items()},
        "metadata": metadata,
    }
    with open(args.sidecar, "w") as out:
        json.dump(sidecar, out)
        out.write("\n")
    values = sum(array.size for array in tensors.values())
    print(f"write_lenet_safetensors: wrote {len(tensors)} tensors ({values} values) to "
          f"{args.file} and {args.sidecar}")


if __name__ == "__main__":
    main()
