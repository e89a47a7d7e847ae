#!/usr/bin/env python3
"""Runs tools/bench (minidl) and tools/bench_pytorch.py (PyTorch eager) on the same models,
batches, precision and layout, one after the other on the same machine, and prints one
markdown table with the ratios ours/PyTorch.

    python3 tools/bench_compare.py --bench build/tools/bench [--python venv/bin/python]
        [--model lenet,resnet20,resnet18] [--device cpu] [--precision fp32] [--threads 2]
        [--steps 20] [--warmup 5] [--channels-last] [--repeats 1] [--profile]

Step-time ratio below 1 and images/s ratio above 1 mean minidl is faster. Each configuration
runs `--repeats` times alternating the two frameworks, and the medians are compared, so that a
machine whose load drifts during the run penalises both alike.

--profile (GPU only) passes --profile (and --profile-steps) to both and prints a second table of
where a step's time goes on the device, per step and per framework: kernel launches, kernel
time, busy time (the union of kernels, copies and memsets) and the gap (wall - busy: the device
idle, waiting for the host). The fields are defined in tools/bench/device_time_summary.h and
tools/bench_pytorch.py alike.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json_lines(command, environment):
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({completed.returncode}):\n{completed.stderr}")
    return [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default=os.path.join(HERE, "..", "build", "tools", "bench"))
    parser.add_argument("--python", default=sys.executable, help="a Python with torch")
    parser.add_argument("--model", default="lenet,resnet20,resnet18")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--threads", type=int, default=0,
                        help="OMP_NUM_THREADS for both (0: leave the environment's)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=0)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--profile", action="store_true",
                        help="also profile both (GPU only) and print kernels, kernel/busy/gap ms")
    parser.add_argument("--profile-steps", type=int, default=10)
    args = parser.parse_args()
    if args.profile and args.device != "cuda":
        parser.error("--profile needs --device cuda: both tools profile GPU kernels")

    environment = dict(os.environ)
    environment.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.threads > 0:
        environment["OMP_NUM_THREADS"] = str(args.threads)
    common = ["--model", args.model, "--device", args.device, "--precision", args.precision,
              "--steps", str(args.steps), "--warmup", str(args.warmup),
              "--batch-size", str(args.batch_size)]
    if args.channels_last:
        common.append("--channels-last")
    if args.profile:
        common += ["--profile", "--profile-steps", str(args.profile_steps)]
    ours_command = [args.bench] + common
    theirs_command = [args.python, os.path.join(HERE, "bench_pytorch.py")] + common
    if args.threads > 0:
        theirs_command += ["--threads", str(args.threads)]

    ours, theirs = {}, {}
    for _ in range(args.repeats):
        for result in run_json_lines(ours_command, environment):
            ours.setdefault(result["model"], []).append(result)
        for result in run_json_lines(theirs_command, environment):
            theirs.setdefault(result["model"], []).append(result)

    def median(results, key):
        return statistics.median(result[key] for result in results)

    torch_version = theirs[next(iter(theirs))][0].get("torch_version", "?")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{args.device}, {args.precision}, threads {args.threads or 'default'}, "
          f"PyTorch {torch_version}, {args.repeats} repeat(s) of {args.steps} steps\n")
    print("| model | batch | minidl ms/step | PyTorch ms/step | ratio (ours/PyTorch) "
          "| minidl img/s | PyTorch img/s | minidl peak alloc MB | PyTorch peak alloc MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in args.model.split(","):
        mine, pytorch = ours[model], theirs[model]
        our_ms, their_ms = median(mine, "step_ms_median"), median(pytorch, "step_ms_median")
        memory = ["-", "-"]
        if "peak_allocated_bytes" in mine[0]:
            memory = [f"{median(mine, 'peak_allocated_bytes') / 2**20:.0f}",
                      f"{median(pytorch, 'peak_allocated_bytes') / 2**20:.0f}"]
        print(f"| {model} | {mine[0]['batch_size']} | {our_ms:.1f} | {their_ms:.1f} | "
              f"{our_ms / their_ms:.2f} | {median(mine, 'images_per_sec'):.0f} | "
              f"{median(pytorch, 'images_per_sec'):.0f} | {memory[0]} | {memory[1]} |")
    if args.profile:
        print_profile_table(args.model.split(","), ours, theirs)


def print_profile_table(models, ours, theirs):
    """Per step, medians over the repeats: minidl's figure, then PyTorch's."""
    columns = [("kernels_per_step", "kernels", "{:.1f}"),
               ("kernel_ms_per_step", "kernel ms", "{:.2f}"),
               ("busy_ms_per_step", "busy ms", "{:.2f}"),
               ("gap_ms_per_step", "gap ms", "{:.2f}")]
    header = "".join(f" minidl {title} | PyTorch {title} |" for _, title, _ in columns)
    print("\nPer step on the device (--profile): busy = kernels, copies and memsets; "
          "gap = wall - busy, the device idle\n")
    print(f"| model |{header}")
    print("|---|" + "---|" * (2 * len(columns)))
    for model in models:
        cells = []
        for key, _, number in columns:
            for results in (ours[model], theirs[model]):
                cells.append(number.format(statistics.median(r["profile"][key] for r in results)))
        print(f"| {model} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
