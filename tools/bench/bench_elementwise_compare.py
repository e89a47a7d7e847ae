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

PyTorch is timed twice: as users call it (torch.add(a, b), which allocates its result), and
into a preallocated result (torch.add(a, b, out=c)). The second is its kernel alone: PyTorch's
CPU allocator gives a 64 MiB result back to the system when it is freed, so each call of the
first kind also faults its result's pages in, where minidl's caching allocator keeps them.
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


# The same ops writing into a preallocated result `out`.
PYTORCH_OUT_OPS = {
    "add": lambda a, b, out: torch.add(a, b, out=out),
    "sub": lambda a, b, out: torch.sub(a, b, out=out),
    "mul": lambda a, b, out: torch.mul(a, b, out=out),
    "exp": lambda a, b, out: torch.exp(a, out=out),
    "tanh": lambda a, b, out: torch.tanh(a, out=out),
    "relu": lambda a, b, out: torch.clamp_min(a, 0, out=out),
    "gelu": lambda a, b, out: torch._C._nn.gelu(a, out=out),
    "sigmoid": lambda a, b, out: torch.sigmoid(a, out=out),
    "sum": lambda a, b, out: torch.sum(a, 0, out=out[0]),
}


def pytorch_times(op, warmup, calls):
    for _ in range(warmup):
        op()
    ms = []
    for _ in range(calls):
        start = time.perf_counter()
        op()
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
    out = torch.empty(args.elements)
    ours = {op: [] for op in args.ops}
    theirs = {op: [] for op in args.ops}
    theirs_out = {op: [] for op in args.ops}
    for _ in range(args.rounds):
        for op, ms in minidl_times(args).items():
            ours[op] += ms
        for op in args.ops:
            theirs[op] += pytorch_times(lambda: PYTORCH_OPS[op](a, b), args.warmup, args.calls)
            theirs_out[op] += pytorch_times(lambda: PYTORCH_OUT_OPS[op](a, b, out), args.warmup,
                                            args.calls)

    print(f"{args.elements} float32 elements, {args.threads} threads, {args.rounds} rounds of "
          f"{args.calls} calls each; PyTorch {torch.__version__}")
    print()
    print("| op | minidl ms | PyTorch ms | ratio | PyTorch ms, out= | ratio to out= |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for op in args.ops:
        mine, pytorch = statistics.median(ours[op]), statistics.median(theirs[op])
        pytorch_out = statistics.median(theirs_out[op])
        medians[op] = {"minidl_ms": mine, "pytorch_ms": pytorch, "ratio": mine / pytorch,
                       "pytorch_out_ms": pytorch_out, "ratio_to_out": mine / pytorch_out}
        print(f"| {op} | {mine:.2f} | {pytorch:.2f} | {mine / pytorch:.2f} | {pytorch_out:.2f} | "
              f"{mine / pytorch_out:.2f} |")
    if args.json:
        print(json.dumps(medians))


if __name__ == "__main__":
    main()
