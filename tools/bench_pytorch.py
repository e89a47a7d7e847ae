#!/usr/bin/env python3
"""PyTorch eager twin of tools/bench: the same models, batches, precisions and layouts, timed the
same way, printed as the same JSON lines (with "framework": "pytorch").

    python3 tools/bench_pytorch.py [--model lenet,resnet20,resnet18] [--device cpu|cuda]
        [--precision fp32|bf16|fp16] [--batch-size N] [--warmup 5] [--steps 20]
        [--threads N] [--channels-last] [--peak-tflops X]

A step is zero_grad, forward, cross-entropy, backward and SGD (momentum 0.9, Nesterov, weight
decay 5e-4), on random data of the real shape; under bf16/fp16 the forward pass and loss run in
torch.autocast and fp16 scales the loss with torch.amp.GradScaler. On CUDA each timed step ends
with torch.cuda.synchronize(). FLOPs per step are three times the forward FLOPs that
torch.utils.flop_counter counts, the convention tools/bench uses.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


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


def make_model(name, in_channels=3):
    """in_channels: of the ResNets (1 for Fashion-MNIST); LeNet takes 1-channel images only."""
    if name == "lenet":
        return LeNet()
    if name == "resnet20":
        return ResNet([16, 32, 64], [3, 3, 3], zero_pad=True, in_channels=in_channels)
    return ResNet([64, 128, 256, 512], [2, 2, 2, 2], zero_pad=False, in_channels=in_channels)


EXPECTED_PARAMETERS = {"lenet": 61_706, "resnet20": 269_722, "resnet18": 11_173_962}
IMAGE_SHAPES = {"lenet": (1, 28, 28), "resnet20": (3, 32, 32), "resnet18": (3, 32, 32)}
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def percentile(values, fraction):
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def run(model_name, batch_size, device, precision, channels_last, args):
    torch.manual_seed(0)
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
    autocast_enabled = precision != "fp32"
    autocast_dtype = AUTOCAST_DTYPES.get(precision, torch.float32)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")

    from torch.utils.flop_counter import FlopCounterMode
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(images)
    forward_flops = counter.get_total_flops()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_enabled):
            loss = F.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    on_gpu = device.type == "cuda"
    for _ in range(args.warmup):
        step()
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    milliseconds = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        if on_gpu:
            torch.cuda.synchronize()
        milliseconds.append((time.perf_counter() - start) * 1e3)

    median_ms = statistics.median(milliseconds)
    step_flops = 3.0 * forward_flops
    tflops = step_flops / (median_ms * 1e-3) / 1e12
    result = {
        "framework": "pytorch", "model": model_name, "batch_size": batch_size,
        "device": "cuda:0" if on_gpu else "cpu", "precision": precision,
        "channels_last": channels_last, "steps": args.steps, "step_ms_median": median_ms,
        "step_ms_p10": percentile(milliseconds, 0.1), "step_ms_p90": percentile(milliseconds, 0.9),
        "step_ms_min": min(milliseconds), "step_ms_max": max(milliseconds),
        "images_per_sec": batch_size / (median_ms * 1e-3), "gflop_per_step": step_flops / 1e9,
        "tflops": tflops, "torch_version": torch.__version__, "threads": torch.get_num_threads(),
    }
    if args.peak_tflops > 0:
        result["fraction_of_peak"] = tflops / args.peak_tflops
    if on_gpu:
        result["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="lenet,resnet20,resnet18")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--batch-size", type=int, default=0,
                        help="0: 256 for LeNet, 512 for the ResNets")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave)")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--peak-tflops", type=float, default=0)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    # float32 means float32, as in minidl (whose TF32 is opt-in, set_allow_tf32): PyTorch lets
    # cuDNN convolutions use TF32 by default, which would make the fp32 GPU rows unlike.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(args.device)
    for model_name in args.model.split(","):
        batch_size = args.batch_size or (256 if model_name == "lenet" else 512)
        result = run(model_name, batch_size, device, args.precision, args.channels_last, args)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
