#!/usr/bin/env python3
"""Issue 35's bandwidth target, measured: minidl's element-wise ops and a full sum against
PyTorch's, on the CPU, 16M float32 elements, the same thread count for both, in one run.

    python3 tools/bench/bench_elementwise_compare.py --bench build-cpu/tools/bench_elementwise
        [--ops add,mul,exp,relu,gelu,sigmoid,sum] [--elements 16777216] [--threads 2]
        [--rounds 5] [--calls 10] [--warmup 2]

Each round runs minidl's bench_elementwise (a child process) and then PyTorch's same calls
(in this process), op after op, so the two take turns and a machine whose load drifts during the
run slows both alike. Per op, the medians over all rounds' timed calls are compared: ratio =
minidl / PyTorch, below 1 when minidl is faster. The target is a ratio of at most 1.2. Prints a
markdown table, and the raw medians as JSON with --json.
"""
import argparse
import json
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

PYTORCH_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "exp": lambda a, b: torch.exp(a),
    "tanh": lambda a, b: torch.tanh(a),
    "relu": lambda a, b: torch.relu(a),
    "gelu": lambda a, b: F.gelu(a),
    "sigmoid": lambda a, b: torch.sigmoid(a),
    "sum": lambda a, b: a.sum(),
}


def pytorch_times(op, a, b, warmup, calls):
    for _ in range(warmup):
        op(a, b)
    ms = []
    for _ in range(calls):
        start = time.perf_counter()
        op(a, b)
        ms.append((time.perf_counter() - start) * 1e3)
    return ms


def minidl_times(args):
    command = [args.bench, "--ops", ",".join(args.ops), "--elements", str(args.elements),
               "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--calls", str(args.calls)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return {row["op"]: row["ms"] for row in map(json.loads, out.splitlines())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, help="minidl's bench_elementwise program")
    parser.add_argument("--ops", default="add,mul,exp,relu,gelu,sigmoid,sum",
                        type=lambda s: s.split(","))
    parser.add_argument("--elements", type=int, default=1 << 24)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="also print the medians as JSON")
    args = parser.parse_args()
    for op in args.ops:
        if op not in PYTORCH_OPS:
            parser.error(f"unknown op {op!r} (known: {', '.join(PYTORCH_OPS)})")

    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(args.elements, generator=generator)
    b = torch.randn(args.elements, generator=generator)
    ours = {op: [] for op in args.ops}
    theirs = {op: [] for op in args.ops}
    for _ in range(args.rounds):
        for op, ms in minidl_times(args).items():
            ours[op] += ms
        for op in args.ops:
            theirs[op] += pytorch_times(PYTORCH_OPS[op], a, b, args.warmup, args.calls)

    print(f"{args.elements} float32 elements, {args.threads} threads, {args.rounds} rounds of "
          f"{args.calls} calls each; PyTorch {torch.__version__}")
    print()
    print("| op | minidl ms (median) | PyTorch ms (median) | ratio minidl / PyTorch |")
    print("|---|---|---|---|")
    medians = {}
    for op in args.ops:
        mine, pytorch = statistics.median(ours[op]), statistics.median(theirs[op])
        medians[op] = {"minidl_ms": mine, "pytorch_ms": pytorch, "ratio": mine / pytorch}
        print(f"| {op} | {mine:.2f} | {pytorch:.2f} | {mine / pytorch:.2f} |")
    if args.json:
        print(json.dumps(medians))


if __name__ == "__main__":
    main()
