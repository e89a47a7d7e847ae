#!/usr/bin/env python3
"""PyTorch twin of tools/bench: the same models, batches, precisions and layouts, timed the
same way, printed as the same JSON lines (with "framework": "pytorch").

    python3 tools/bench/bench_pytorch.py [--model lenet,resnet20,resnet18,gpt] [--device cpu|cuda]
        [--precision fp32|bf16|fp16] [--batch-size N] [--warmup 5] [--steps 20]
        [--threads N] [--channels-last] [--peak-tflops X] [--profile] [--profile-steps 10]
        [--mode eager|default|reduce-overhead|max-autotune] [--tf32 on|off]
        [--cudnn-benchmark on|off] [--gpt-shape auto|default|shakespeare-char|gpt2-small]

--mode: eager (the default) runs the model as it is; the others run torch.compile(model,
mode=...) with that mode ("default" is torch.compile's default mode; "reduce-overhead" adds
CUDA graphs, the trick of tools/bench's captured step; "max-autotune" adds Triton fusion and
autotuned matrix products). The model is compiled, as PyTorch's tutorials do; the loss, the
backward pass's bookkeeping and the optimizer step stay eager. Compilation happens in the
warm-up steps (at least 3 under a compile mode, so that reduce-overhead has recorded its
graphs), which are not timed; the JSON reports their wall time as "warmup_seconds".

--tf32 on lets float32 convolutions and matrix products use TF32 (torch.backends.cudnn.allow_tf32
and torch.backends.cuda.matmul.allow_tf32); off, the default, keeps float32 arithmetic, as
tools/bench's --tf32 off does.

--cudnn-benchmark on sets torch.backends.cudnn.benchmark (cuDNN times its convolution algorithms
in the warm-up and keeps the fastest), as tools/bench's --cudnn-benchmark on does; off, the
default, is PyTorch's default too.

Peak memory (CUDA): torch.cuda.max_memory_allocated and max_memory_reserved over the warm-up
(compilation and graph recording included) and the timed steps: the statistics are reset just
before the warm-up, where tools/bench resets minidl's.

A step is zero_grad, forward, cross-entropy, backward and SGD (momentum 0.9, Nesterov, weight
decay 5e-4), on random data of the real shape; under bf16/fp16 the forward pass and loss run in
torch.autocast and fp16 scales the loss with torch.amp.GradScaler. On CUDA each timed step ends
with torch.cuda.synchronize(). FLOPs per step are three times the forward FLOPs that
torch.utils.flop_counter counts, the convention tools/bench uses.

--model gpt is train_gpt's GPT (tools/pytorch/gpt_pytorch.py, nanoGPT's model) in one of three
shapes, --gpt-shape: "default" is train_gpt's (vocabulary 256, block 128, 4 layers, 4 heads, 128
channels, no bias; 836,736 parameters; batch 32), "shakespeare-char" nanoGPT's
config/train_shakespeare_char.py on 256 bytes (block 256, 6 layers, 6 heads, 384 channels, no
bias; 10,818,432 parameters; batch 64), "gpt2-small" is GPT-2 small as nanoGPT
trains it (vocabulary 50304, GPT-2's 50257 padded to a multiple of 64, block 1024, 12 layers, 12
heads, 768 channels, biases; 124,475,904 parameters; batch 8); "auto", the default, takes
"default" on the CPU and "gpt2-small" on CUDA. Its batch is random tokens, block_size of them
per sequence with the next ones as targets; its step is train_gpt's: zero_grad, forward with
nanoGPT's loss, backward and AdamW (lr 1e-3, betas 0.9, 0.99, weight decay 0.1 on the matrices
and embeddings; PyTorch's default implementation), without clipping. Its JSON row adds
"gpt_shape", "block_size" and "tokens_per_sec"; "images_per_sec" counts sequences. Its FLOPs
count the causal attention as full attention, as torch.utils.flop_counter does.

--profile (GPU only), as tools/bench --profile: after the timed steps, --profile-steps more run
under torch.profiler (ProfilerActivity.CPU and CUDA; one step first in the profiler's warm-up,
recorded and thrown away), and the JSON gains a "profile" object computed from the CUDA kernel,
memcpy and memset events, with the same keys and meanings as minidl's
(tools/bench/device_time_summary.h):
    steps               the profiled steps
    wall_ms_per_step    host time of the span (the device synchronised at both ends) / steps
    kernels_per_step    kernel launches / steps
    kernel_ms_per_step  sum of the kernels' durations / steps (overlapping kernels both count)
    busy_ms_per_step    length of the union of all kernel, memcpy and memset intervals / steps:
                        the time the device was doing anything
    gap_ms_per_step     wall - busy (never below 0): the time the device sat idle, waiting for
                        the host (launch and framework overhead, synchronisation)
    memcpy_ms_per_step  sum of the memory copies' and memsets' durations / steps
    top_kernels         the 10 kernels (by name) with the most total time, most first:
                        [{name, ms_per_step, calls_per_step}]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The GPT twin's model, in tools/pytorch/ (imported where the GPT is benchmarked).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))


class LeNet(nn.Module):
    """minidl's models::LeNet: ReLU and max pooling, 61,706 parameters."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class BasicBlock(nn.Module):
    """minidl's models::BasicBlock, with a projection (option B) or zero-padding (option A)
    shortcut where the shape changes."""

    def __init__(self, in_channels, out_channels, stride, zero_pad):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.stride, self.zero_pad = stride, zero_pad
        self.extra_channels = out_channels - in_channels
        self.downsample = None
        if not zero_pad and (stride != 1 or in_channels != out_channels):
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                nn.BatchNorm2d(out_channels))

    def shortcut(self, x):
        if self.downsample is not None:
            return self.downsample(x)
        if self.stride == 1 and self.extra_channels == 0:
            return x
        before = self.extra_channels // 2
        sampled = x[:, :, ::self.stride, ::self.stride]
        return F.pad(sampled, (0, 0, 0, 0, before, self.extra_channels - before))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """minidl's models::ResNet: 3x3 stem, no max pool, stages of BasicBlocks, average pool, fc,
    with its initialisation (torchvision's: He-normal convolutions, fan_out)."""

    def __init__(self, stage_channels, blocks_per_stage, zero_pad, in_channels=3, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, stage_channels[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(stage_channels[0])
        layers, channels = [], stage_channels[0]
        for stage, (width, blocks) in enumerate(zip(stage_channels, blocks_per_stage)):
            stride = 1 if stage == 0 else 2
            stage_blocks = []
            for block in range(blocks):
                stage_blocks.append(BasicBlock(channels, width, stride if block == 0 else 1,
                                               zero_pad))
                channels = width
            layers.append(nn.Sequential(*stage_blocks))
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(channels, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def gpt_config(shape):
    """The GPTConfig of --gpt-shape "default", "shakespeare-char" or "gpt2-small"."""
    from gpt_pytorch import GPTConfig  # here, so that the image models need no numpy
    if shape == "default":
        return GPTConfig()
    if shape == "shakespeare-char":
        return GPTConfig(vocab_size=256, block_size=256, n_layer=6, n_head=6, n_embd=384,
                         bias=False)
    return GPTConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768,
                     bias=True)


def make_model(name, in_channels=3, gpt_shape="default"):
    """in_channels: of the ResNets (1 for Fashion-MNIST); LeNet takes 1-channel images only.
    gpt_shape: of the GPT, as gpt_config's."""
    if name == "lenet":
        return LeNet()
    if name == "resnet20":
        return ResNet([16, 32, 64], [3, 3, 3], zero_pad=True, in_channels=in_channels)
    if name == "resnet18":
        return ResNet([64, 128, 256, 512], [2, 2, 2, 2], zero_pad=False, in_channels=in_channels)
    if name == "gpt":
        from gpt_pytorch import GPT
        return GPT(gpt_config(gpt_shape))
    raise ValueError(f"make_model: expected lenet, resnet20, resnet18 or gpt, got {name!r}")


EXPECTED_PARAMETERS = {"lenet": 61_706, "resnet20": 269_722, "resnet18": 11_173_962}
GPT_SHAPES = ["default", "shakespeare-char", "gpt2-small"]
GPT_EXPECTED_PARAMETERS = {"default": 836_736, "shakespeare-char": 10_818_432,
                           "gpt2-small": 124_475_904}
GPT_BATCH_SIZES = {"default": 32, "shakespeare-char": 64, "gpt2-small": 8}
IMAGE_SHAPES = {"lenet": (1, 28, 28), "resnet20": (3, 32, 32), "resnet18": (3, 32, 32)}
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
MODES = ["eager", "default", "reduce-overhead", "max-autotune"]


def percentile(values, fraction):
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def covered_ns(intervals):
    """Nanoseconds covered by at least one (start_ns, end_ns) interval: the length of their union,
    for intervals in any order, overlapping or nested."""
    covered, run_start, run_end = 0, None, None
    for start, end in sorted(intervals):
        if run_end is not None and start <= run_end:
            run_end = max(run_end, end)  # extends the current run
            continue
        if run_end is not None:
            covered += run_end - run_start
        run_start, run_end = start, end
    if run_end is not None:
        covered += run_end - run_start
    return covered


def summarize_device_time(activities, steps, wall_ms, top_kernel_count=10):
    """The "profile" object (fields in the module's docstring) from `activities`, tuples
    (name, start_ns, end_ns, kind) with kind "kernel", "memcpy" or "memset": everything the
    device did during `steps` steps that took `wall_ms` on the host."""
    if steps <= 0:
        raise ValueError(f"summarize_device_time: expected at least one step, got {steps}")
    for name, start, end, _ in activities:
        if end < start:
            raise ValueError(f"device activity {name!r}: expected end >= start, got start "
                             f"{start} ns and end {end} ns")
    kernel_totals = {}  # name: [total ns, calls]
    kernel_ns = copy_ns = kernel_count = 0
    for name, start, end, kind in activities:
        if kind == "kernel":
            kernel_ns += end - start
            kernel_count += 1
            total = kernel_totals.setdefault(name, [0, 0])
            total[0] += end - start
            total[1] += 1
        else:
            copy_ns += end - start
    ns_per_ms = 1e6
    wall_ms_per_step = wall_ms / steps
    busy_ns = covered_ns((start, end) for _, start, end, _ in activities)
    busy_ms_per_step = busy_ns / ns_per_ms / steps
    ranked = sorted(kernel_totals.items(), key=lambda item: (-item[1][0], item[0]))
    return {
        "steps": steps,
        "wall_ms_per_step": wall_ms_per_step,
        "kernels_per_step": kernel_count / steps,
        "kernel_ms_per_step": kernel_ns / ns_per_ms / steps,
        "busy_ms_per_step": busy_ms_per_step,
        # The host's and the device's clocks are read apart, so busy can exceed wall by a hair
        # when the device never idled; the gap is then 0, not negative.
        "gap_ms_per_step": max(wall_ms_per_step - busy_ms_per_step, 0.0),
        "memcpy_ms_per_step": copy_ns / ns_per_ms / steps,
        "top_kernels": [{"name": name, "ms_per_step": total_ns / ns_per_ms / steps,
                         "calls_per_step": calls / steps}
                        for name, (total_ns, calls) in ranked[:top_kernel_count]],
    }


# Kineto's activity types of device work, and the kinds summarize_device_time takes.
DEVICE_ACTIVITY_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def device_activities(events):
    """(name, start_ns, end_ns, kind) of the CUDA kernels, memcpys and memsets among
    torch.profiler's events (not the gpu_user_annotation ranges that record_function, e.g.
    the optimizer's, leaves on the device's timeline)."""
    from torch.autograd import DeviceType
    for event in events:
        if event.device_type != DeviceType.CUDA:
            continue
        activity_type = getattr(event, "activity_type", None)
        if activity_type is None:  # a torch without FunctionEvent.activity_type: by the name
            if getattr(event, "is_user_annotation", False):
                continue
            activity_type = ("gpu_memcpy" if event.name.startswith("Memcpy") else
                             "gpu_memset" if event.name.startswith("Memset") else "kernel")
        if activity_type in DEVICE_ACTIVITY_KINDS:
            # time_range is in microseconds (fractional) from the trace's start.
            yield (event.name, round(event.time_range.start * 1000),
                   round(event.time_range.end * 1000), DEVICE_ACTIVITY_KINDS[activity_type])


def profile_device_time(step, steps):
    """--profile: `steps` more steps under torch.profiler; returns the "profile" object."""
    from torch.profiler import ProfilerActivity, profile, schedule
    torch.cuda.synchronize()
    # The profiler's warm-up step is traced and thrown away, as in tools/bench, so that whatever
    # starting the trace costs once (CUPTI sets itself up lazily) stays out of the profiled steps.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=0, warmup=1, active=steps, repeat=1)) as profiler:
        step()
        torch.cuda.synchronize()
        profiler.step()  # warm-up -> recording
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - start) * 1e3
    summary = summarize_device_time(list(device_activities(profiler.events())), steps, wall_ms)
    if summary["kernels_per_step"] == 0:
        sys.exit(f"bench_pytorch.py: error: --profile: expected torch.profiler to record the "
                 f"kernels of {steps} steps, but it recorded none")
    return summary


def image_workload(model_name, batch_size, device, channels_last):
    """(model, loss_of, optimizer): loss_of(forward) is the loss of a random batch of images
    through `forward` (the model or its compiled form)."""
    model = make_model(model_name).to(device)
    parameters = sum(p.numel() for p in model.parameters())
    assert parameters == EXPECTED_PARAMETERS[model_name], (model_name, parameters)
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    images = torch.randn(batch_size, *IMAGE_SHAPES[model_name], device=device)
    images = images.contiguous(memory_format=memory_format)
    labels = torch.randint(0, 10, (batch_size,), device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    return model, lambda forward: F.cross_entropy(forward(images), labels), optimizer


def gpt_workload(shape, batch_size, device):
    """(model, loss_of, optimizer) as image_workload's, for the GPT of `shape` on a batch of
    random tokens."""
    model = make_model("gpt", gpt_shape=shape).to(device)
    parameters = model.num_parameters()
    assert parameters == GPT_EXPECTED_PARAMETERS[shape], (shape, parameters)
    config = model.config
    tokens = torch.randint(0, config.vocab_size, (batch_size, config.block_size + 1),
                           device=device)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=1e-3,
                                           betas=(0.9, 0.99))
    return model, lambda forward: forward(inputs, targets)[1], optimizer


def run(model_name, batch_size, device, precision, channels_last, args):
    torch.manual_seed(0)
    if model_name == "gpt":
        model, loss_of, optimizer = gpt_workload(args.gpt_shape, batch_size, device)
        channels_last = False  # no convolutions
    else:
        model, loss_of, optimizer = image_workload(model_name, batch_size, device, channels_last)
    autocast_enabled = precision != "fp32"
    autocast_dtype = AUTOCAST_DTYPES.get(precision, torch.float32)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")

    from torch.utils.flop_counter import FlopCounterMode
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        loss_of(model)
    forward_flops = counter.get_total_flops()

    forward = model if args.mode == "eager" else torch.compile(model, mode=args.mode)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_enabled):
            loss = loss_of(forward)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    def timed_step():
        if args.mode == "reduce-overhead":
            # A new iteration for the CUDA graph trees: the last step's outputs may be
            # overwritten (the loss is consumed within the step).
            torch.compiler.cudagraph_mark_step_begin()
        step()

    on_gpu = device.type == "cuda"
    if on_gpu:  # the peak from here on: warm-up (and compilation) and timed steps
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    warmup = max(args.warmup, 3) if args.mode != "eager" else args.warmup
    warmup_start = time.perf_counter()
    for _ in range(warmup):
        timed_step()
    if on_gpu:
        torch.cuda.synchronize()
    warmup_seconds = time.perf_counter() - warmup_start
    milliseconds = []
    for _ in range(args.steps):
        start = time.perf_counter()
        timed_step()
        if on_gpu:
            torch.cuda.synchronize()
        milliseconds.append((time.perf_counter() - start) * 1e3)

    median_ms = statistics.median(milliseconds)
    step_flops = 3.0 * forward_flops
    tflops = step_flops / (median_ms * 1e-3) / 1e12
    result = {
        "framework": "pytorch", "model": model_name, "batch_size": batch_size,
        "device": "cuda:0" if on_gpu else "cpu", "precision": precision,
        "channels_last": channels_last, "mode": args.mode, "tf32": args.tf32 == "on",
        "cudnn_benchmark": args.cudnn_benchmark == "on",
        "warmup_steps": warmup, "warmup_seconds": warmup_seconds,
        "steps": args.steps, "step_ms_median": median_ms,
        "step_ms_p10": percentile(milliseconds, 0.1), "step_ms_p90": percentile(milliseconds, 0.9),
        "step_ms_min": min(milliseconds), "step_ms_max": max(milliseconds),
        "images_per_sec": batch_size / (median_ms * 1e-3), "gflop_per_step": step_flops / 1e9,
        "tflops": tflops, "torch_version": torch.__version__, "threads": torch.get_num_threads(),
    }
    if model_name == "gpt":
        block_size = model.config.block_size
        result.update({"gpt_shape": args.gpt_shape, "block_size": block_size,
                       "tokens_per_sec": batch_size * block_size / (median_ms * 1e-3)})
    if args.peak_tflops > 0:
        result["fraction_of_peak"] = tflops / args.peak_tflops
    if on_gpu:
        result["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    if args.profile:
        result["profile"] = profile_device_time(timed_step, args.profile_steps)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="lenet,resnet20,resnet18")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--batch-size", type=int, default=0,
                        help="0: 256 for LeNet, 512 for the ResNets, 32 or 8 for the GPT "
                             "(default or gpt2-small shape)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave)")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--peak-tflops", type=float, default=0)
    parser.add_argument("--profile", action="store_true",
                        help="after the timed steps, profile --profile-steps more with "
                             "torch.profiler: kernel time, device-busy time and idle gaps per "
                             "step (GPU only)")
    parser.add_argument("--profile-steps", type=int, default=10)
    parser.add_argument("--mode", default="eager", choices=MODES,
                        help="eager, or torch.compile's mode (default, reduce-overhead, "
                             "max-autotune)")
    parser.add_argument("--tf32", default="off", choices=["on", "off"],
                        help="on: float32 convolutions and matrix products may use TF32")
    parser.add_argument("--cudnn-benchmark", default="off", choices=["on", "off"],
                        help="on: torch.backends.cudnn.benchmark (time the convolution "
                             "algorithms in the warm-up)")
    parser.add_argument("--gpt-shape", default="auto", choices=["auto"] + GPT_SHAPES,
                        help="--model gpt's shape: train_gpt's default, nanoGPT's "
                             "shakespeare-char, GPT-2 small, or auto (default on the CPU, "
                             "gpt2-small on CUDA)")
    args = parser.parse_args()
    if args.profile_steps <= 0:
        parser.error(f"--profile-steps: expected a positive number, got {args.profile_steps}")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    # Both switches follow --tf32, as minidl's set_allow_tf32 does: PyTorch lets cuDNN
    # convolutions use TF32 by default, which with --tf32 off would make the fp32 GPU rows unlike.
    torch.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
    torch.backends.cudnn.allow_tf32 = args.tf32 == "on"
    torch.backends.cudnn.benchmark = args.cudnn_benchmark == "on"
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(args.device)
    if args.profile and device.type != "cuda":
        sys.exit("bench_pytorch.py: error: --profile needs a GPU (--device cuda): it records "
                 f"CUDA kernels with torch.profiler, but the device is {device.type}")
    if args.gpt_shape == "auto":
        args.gpt_shape = "gpt2-small" if device.type == "cuda" else "default"
    for model_name in args.model.split(","):
        default_batch_size = (256 if model_name == "lenet" else
                              GPT_BATCH_SIZES[args.gpt_shape] if model_name == "gpt" else 512)
        batch_size = args.batch_size or default_batch_size
        result = run(model_name, batch_size, device, args.precision, args.channels_last, args)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
