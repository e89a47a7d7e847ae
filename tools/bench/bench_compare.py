#!/usr/bin/env python3
"""Runs minidl's bench (build/tools/bench) and tools/bench/bench_pytorch.py (PyTorch, eager or
compiled) on the same models, batches, precision and layout, one after the other on the same
machine, and prints one markdown table with the ratios ours/PyTorch.

    python3 tools/bench/bench_compare.py --bench build/tools/bench [--python venv/bin/python]
        [--model lenet,resnet20,resnet18] [--device cpu] [--precision fp32] [--threads 2]
        [--steps 20] [--warmup 5] [--channels-last] [--repeats 1] [--profile]
        [--pytorch-mode eager,reduce-overhead,max-autotune] [--tf32 on|off]
        [--cudnn-benchmark on|off] [--optimizer-step sgd,adamw]

Step-time ratio below 1 and images/s ratio above 1 mean minidl is faster. Each configuration
runs `--repeats` times alternating the two frameworks, and the medians are compared, so that a
machine whose load drifts during the run penalises both alike.

--pytorch-mode: comma-separated PyTorch modes, each a row against the same minidl run: eager,
or torch.compile's default, reduce-overhead or max-autotune (tools/bench/bench_pytorch.py --mode).
Compilation happens in PyTorch's untimed warm-up; its wall time is the "PyTorch warm-up s"
column. --tf32 goes to both sides alike (off by default: float32 arithmetic on both), and so
does --cudnn-benchmark (off by default: cuDNN's heuristics choose the convolution algorithms on
both; on: each times them in its warm-up, torch.backends.cudnn.benchmark in PyTorch).

Peak memory is each side's peak over its whole run of the configuration (warm-up, CUDA-graph
capture or compilation, and the timed steps), allocated and reserved, in MiB. On a GPU a line per
model then says what minidl's allocated peak held: its ten largest shares by the op that
allocated them (bench's "peak_allocated_by_op", from the first repeat).

--profile (GPU only) passes --profile (and --profile-steps) to both and prints a second table of
where a step's time goes on the device, per step and per framework: kernel launches, kernel
time, busy time (the union of kernels, copies and memsets) and the gap (wall - busy: the device
idle, waiting for the host), then each side's ten kernels with the most time per step, with
their calls per step. The fields are defined in tools/bench/device_time_summary.h and
tools/bench/bench_pytorch.py alike.

--gpt-shape picks --model gpt's shape on both sides (tools/bench/bench.cpp lists them).

--optimizer-step sgd,adamw times the optimizer's step alone for each model's parameters (bench
--optimizer-step; ResNet-18: 11.2M) against torch.optim in the same run: SGD with PyTorch's
default (on the CPU its single-tensor loop) and foreach=True, AdamW with foreach=True and
fused=True (where this PyTorch has a fused kernel for the device). The PyTorch side runs this
script again under --python with the hidden --pytorch-optimizer-step, which builds the models of
tools/bench/bench_pytorch.py.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
PYTORCH_MODES = ["eager", "default", "reduce-overhead", "max-autotune"]


def run_json_lines(command, environment):
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({completed.returncode}):\n{completed.stderr}")
    return [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]


# torch.optim variants timed for each bench --optimizer-step name: (label, class, arguments),
# the hyper-parameters bench uses.
SGD_ARGUMENTS = dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
PYTORCH_OPTIMIZERS = {
    "sgd": [("SGD", "SGD", SGD_ARGUMENTS),
            ("SGD foreach", "SGD", dict(SGD_ARGUMENTS, foreach=True))],
    "adamw": [("AdamW foreach", "AdamW", dict(lr=1e-3, foreach=True)),
              ("AdamW fused", "AdamW", dict(lr=1e-3, fused=True))],
}


def time_pytorch_optimizer_steps(args):
    """The PyTorch half of --optimizer-step (runs under --python): one JSON line per variant."""
    import torch  # only this half needs torch
    sys.path.insert(0, HERE)
    import bench_pytorch
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    for model_name in args.model.split(","):
        for optimizer_name in args.optimizer_step.split(","):
            for label, class_name, arguments in PYTORCH_OPTIMIZERS[optimizer_name]:
                torch.manual_seed(0)
                params = list(bench_pytorch.make_model(model_name).to(device).parameters())
                for p in params:
                    p.grad = torch.randn_like(p) * 1e-2
                try:
                    optimizer = getattr(torch.optim, class_name)(params, **arguments)
                    optimizer.step()
                except (RuntimeError, ValueError) as error:  # no fused kernel for the device
                    print(json.dumps({"framework": "pytorch", "model": model_name,
                                      "optimizer": optimizer_name, "variant": label,
                                      "unsupported": str(error).splitlines()[0]}))
                    continue
                for _ in range(max(args.warmup, 1)):
                    optimizer.step()
                milliseconds = []
                for _ in range(args.steps):
                    start = time.perf_counter()
                    optimizer.step()
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    milliseconds.append((time.perf_counter() - start) * 1e3)
                print(json.dumps({"framework": "pytorch", "model": model_name,
                                  "optimizer": optimizer_name, "variant": label,
                                  "torch_version": torch.__version__,
                                  "threads": torch.get_num_threads(),
                                  "step_ms_median": statistics.median(milliseconds)}),
                      flush=True)


def compare_optimizer_steps(args, environment):
    """bench --optimizer-step against time_pytorch_optimizer_steps, medians over --repeats."""
    common = ["--model", args.model, "--device", args.device, "--steps", str(args.steps),
              "--warmup", str(args.warmup)]
    ours_command = [args.bench, "--optimizer-step", args.optimizer_step] + common
    theirs_command = [args.python, os.path.abspath(__file__), "--pytorch-optimizer-step",
                      "--optimizer-step", args.optimizer_step, "--threads", str(args.threads)]
    theirs_command += common
    ours, theirs = {}, {}
    for _ in range(args.repeats):
        for result in run_json_lines(ours_command, environment):
            ours.setdefault((result["model"], result["optimizer"]), []).append(result)
        for result in run_json_lines(theirs_command, environment):
            theirs.setdefault((result["model"], result["optimizer"], result["variant"]),
                              []).append(result)
    versions = [r[0]["torch_version"] for r in theirs.values() if "torch_version" in r[0]]
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {args.device}, "
          f"threads {args.threads or 'default'}, PyTorch {versions[0] if versions else '?'}, "
          f"{args.repeats} repeat(s) of {args.steps} optimizer steps\n")
    print("| model | parameters | optimizer | minidl ms/step | PyTorch variant | PyTorch ms/step "
          "| ratio (ours/PyTorch) |")
    print("|---|---|---|---|---|---|---|")
    for model in args.model.split(","):
        for optimizer in args.optimizer_step.split(","):
            mine = ours[(model, optimizer)]
            our_ms = statistics.median(r["step_ms_median"] for r in mine)
            for label, _, _ in PYTORCH_OPTIMIZERS[optimizer]:
                pytorch = theirs.get((model, optimizer, label), [])
                if not pytorch or "unsupported" in pytorch[0]:
                    reason = pytorch[0]["unsupported"] if pytorch else "no result"
                    print(f"| {model} | {mine[0]['parameters'] / 1e6:.1f}M | {optimizer} | "
                          f"{our_ms:.1f} | {label} | unsupported ({reason}) | - |")
                    continue
                their_ms = statistics.median(r["step_ms_median"] for r in pytorch)
                print(f"| {model} | {mine[0]['parameters'] / 1e6:.1f}M | {optimizer} | "
                      f"{our_ms:.1f} | {label} | {their_ms:.1f} | {our_ms / their_ms:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench",
                        default=os.path.join(HERE, "..", "..", "build", "tools", "bench"))
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
    parser.add_argument("--pytorch-mode", default="eager",
                        help="comma-separated: eager, default, reduce-overhead, max-autotune "
                             "(torch.compile's modes); a row each")
    parser.add_argument("--tf32", default="off", choices=["on", "off"],
                        help="float32 convolutions and matrix products may use TF32, both sides")
    parser.add_argument("--cudnn-benchmark", default="off", choices=["on", "off"],
                        help="cuDNN times its convolution algorithms in the warm-up, both sides")
    parser.add_argument("--gpt-shape", default="auto",
                        choices=["auto", "default", "shakespeare-char", "gpt2-small"])
    parser.add_argument("--optimizer-step", default="",
                        help="comma-separated sgd, adamw: time optimizer steps alone instead")
    parser.add_argument("--pytorch-optimizer-step", action="store_true",
                        help=argparse.SUPPRESS)  # the PyTorch half, run under --python
    args = parser.parse_args()
    if args.pytorch_optimizer_step:
        time_pytorch_optimizer_steps(args)
        return
    if args.profile and args.device != "cuda":
        parser.error("--profile needs --device cuda: both tools profile GPU kernels")
    modes = args.pytorch_mode.split(",")
    unknown_modes = [mode for mode in modes if mode not in PYTORCH_MODES]
    if unknown_modes:
        parser.error(f"--pytorch-mode: unknown {', '.join(unknown_modes)} (expected "
                     f"{', '.join(PYTORCH_MODES)})")

    environment = dict(os.environ)
    environment.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.threads > 0:
        environment["OMP_NUM_THREADS"] = str(args.threads)
    if args.optimizer_step:
        unknown = set(args.optimizer_step.split(",")) - set(PYTORCH_OPTIMIZERS)
        if unknown or args.profile:
            parser.error(f"--optimizer-step takes {', '.join(PYTORCH_OPTIMIZERS)} (got "
                         f"{args.optimizer_step}) and no --profile")
        compare_optimizer_steps(args, environment)
        return
    common = ["--model", args.model, "--device", args.device, "--precision", args.precision,
              "--steps", str(args.steps), "--warmup", str(args.warmup),
              "--batch-size", str(args.batch_size), "--tf32", args.tf32,
              "--cudnn-benchmark", args.cudnn_benchmark,
              "--gpt-shape", args.gpt_shape]
    if args.channels_last:
        common.append("--channels-last")
    if args.profile:
        common += ["--profile", "--profile-steps", str(args.profile_steps)]
    ours_command = [args.bench] + common
    theirs_command = [args.python, os.path.join(HERE, "bench_pytorch.py")] + common
    if args.threads > 0:
        theirs_command += ["--threads", str(args.threads)]

    ours, theirs = {}, {}  # model -> results; (model, mode) -> results
    for _ in range(args.repeats):
        for result in run_json_lines(ours_command, environment):
            ours.setdefault(result["model"], []).append(result)
        for mode in modes:
            for result in run_json_lines(theirs_command + ["--mode", mode], environment):
                theirs.setdefault((result["model"], mode), []).append(result)

    def median(results, key):
        return statistics.median(result[key] for result in results)

    def mib(results, key):
        return f"{median(results, key) / 2**20:.0f}" if key in results[0] else "-"

    torch_version = next(iter(theirs.values()))[0].get("torch_version", "?")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{args.device}, {args.precision}, TF32 {args.tf32}, "
          f"cuDNN benchmark {args.cudnn_benchmark}, threads {args.threads or 'default'}, "
          f"PyTorch {torch_version}, {args.repeats} repeat(s) of {args.steps} steps\n")
    print("| model | batch | PyTorch mode | minidl ms/step | PyTorch ms/step "
          "| ratio (ours/PyTorch) | minidl img/s | PyTorch img/s | PyTorch warm-up s "
          "| minidl peak alloc MB | PyTorch peak alloc MB "
          "| minidl peak reserved MB | PyTorch peak reserved MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.model.split(","):
        mine = ours[model]
        our_ms = median(mine, "step_ms_median")
        for mode in modes:
            pytorch = theirs[(model, mode)]
            their_ms = median(pytorch, "step_ms_median")
            print(f"| {model} | {mine[0]['batch_size']} | {mode} | {our_ms:.2f} | "
                  f"{their_ms:.2f} | {our_ms / their_ms:.2f} | "
                  f"{median(mine, 'images_per_sec'):.0f} | "
                  f"{median(pytorch, 'images_per_sec'):.0f} | "
                  f"{median(pytorch, 'warmup_seconds'):.1f} | "
                  f"{mib(mine, 'peak_allocated_bytes')} | {mib(pytorch, 'peak_allocated_bytes')} | "
                  f"{mib(mine, 'peak_reserved_bytes')} | {mib(pytorch, 'peak_reserved_bytes')} |")
    print_peak_by_op(args.model.split(","), ours)
    if args.profile:
        print_profile_table(args.model.split(","), modes, ours, theirs)
        print_top_kernels(args.model.split(","), modes, ours, theirs)


def print_peak_by_op(models, ours):
    """minidl's allocated peak by op, where bench recorded it (a GPU run)."""
    for model in models:
        by_op = ours[model][0].get("peak_allocated_by_op")
        if by_op is None:
            continue
        if not by_op:
            print(f"\n{model}: minidl's peak by op was not recorded (the timed steps raised it)")
            continue
        shares = ", ".join(f"{entry['op'] or '(outside every op)'} {entry['bytes'] / 2**20:.0f} MiB"
                           f" in {entry['blocks']}" for entry in by_op[:10])
        print(f"\n{model}: minidl's allocated peak by op (MiB in blocks): {shares}")


def print_profile_table(models, modes, ours, theirs):
    """Per step, medians over the repeats: minidl's figure, then PyTorch's in each mode."""
    columns = [("kernels_per_step", "kernels", "{:.1f}"),
               ("kernel_ms_per_step", "kernel ms", "{:.2f}"),
               ("busy_ms_per_step", "busy ms", "{:.2f}"),
               ("gap_ms_per_step", "gap ms", "{:.2f}")]
    header = "".join(f" minidl {title} | PyTorch {title} |" for _, title, _ in columns)
    print("\nPer step on the device (--profile): busy = kernels, copies and memsets; "
          "gap = wall - busy, the device idle\n")
    print(f"| model | PyTorch mode |{header}")
    print("|---|---|" + "---|" * (2 * len(columns)))
    for model in models:
        for mode in modes:
            cells = []
            for key, _, number in columns:
                for results in (ours[model], theirs[(model, mode)]):
                    cells.append(number.format(
                        statistics.median(r["profile"][key] for r in results)))
            print(f"| {model} | {mode} | " + " | ".join(cells) + " |")


def print_top_kernels(models, modes, ours, theirs):
    """Each side's kernels with the most time per step (its first repeat): where a step goes."""
    for model in models:
        sides = [("minidl", ours[model])]
        sides += [(f"PyTorch {mode}", theirs[(model, mode)]) for mode in modes]
        for side, results in sides:
            print(f"\nTop kernels per step, {model}, {side}:\n")
            print("| kernel | ms per step | calls per step |")
            print("|---|---|---|")
            for kernel in results[0]["profile"].get("top_kernels", []):
                name = kernel["name"].replace("|", "/")
                if len(name) > 120:
                    name = name[:117] + "..."
                print(f"| {name} | {kernel['ms_per_step']:.3f} | {kernel['calls_per_step']:.1f} |")


if __name__ == "__main__":
    main()
