#!/usr/bin/env python3
"""train_cifar10's default recipe in PyTorch eager, for side-by-side epoch times and
time-to-accuracy on the same machine:

    python3 tools/pytorch/train_cifar10_pytorch.py [--dataset cifar10|fashion-mnist]
        [--model resnet20|resnet18] [--epochs 30] [--device cpu|cuda]
        [--precision fp32|bf16|fp16] [--threads N] [--target 0.94]
        [--data-dir <MINIDL_DATA or /usr/share/datasets>/cifar-10-batches-bin]

ResNet-20 or CIFAR ResNet-18 (tools/bench/bench_pytorch.py's, the same as models::ResNet20/ResNet18,
with a 1-channel stem on Fashion-MNIST) trained with batch 128 reshuffled every epoch (the last
batch partial), SGD momentum 0.9, Nesterov, weight decay 5e-4, and minidl's onecycle schedule
stepped per batch: optim::OneCycleLR's defaults, which are PyTorch's OneCycleLR with
anneal_strategy "linear" and cycle_momentum off (lr from --lr / 25 up to --lr over the first 30%
of all steps, then down to --lr / 25 / 1e4; momentum stays 0.9). The test set is evaluated after
each epoch; the epoch time includes it, as in train_cifar10.

Each training image is cut at a random offset from the image padded with zero pixels (padding 4
for 32x32 CIFAR-10, 2 for 28x28 Fashion-MNIST), mirrored left to right with probability 0.5,
then scaled to [0, 1] and normalised with the training set's mean and std (CIFAR-10 per channel
0.4914, 0.4822, 0.4465 / 0.2470, 0.2435, 0.2616; Fashion-MNIST 0.2860 / 0.3530), in that order,
as minidl's data/transforms/augmentation_math.h (and torchvision's RandomCrop,
RandomHorizontalFlip, ToTensor, Normalize). Unlike a torchvision DataLoader, the whole dataset
stays on the device as uint8 and each batch is augmented there in one gather, with random
offsets and flips drawn for the batch at once, because per-image transforms in worker processes
would dominate a GPU epoch of ResNet-20; minidl's DataLoader likewise augments whole batches on
the GPU (data/transforms/batch_augment.h). The draws differ from minidl's, as do the initial
weights and the shuffle: compare accuracies across seeds, not run by run.

Under --precision bf16/fp16 the forward pass and loss run in torch.autocast (evaluation too),
fp16 scales the loss with torch.amp.GradScaler, and on CUDA the model and batches are
channels-last, as minidl's convolutions are under autocast. fp32 on CUDA is exact float32
(TF32 off, cuDNN included), as minidl's default. Prints a line per epoch and, last, one JSON
object with the epoch seconds and the seconds until the test accuracy first reached --target.
"""
import argparse
import dataclasses
import json
import os
import sys

import torch
import torch.nn.functional as F

# The models are bench_pytorch.py's (tools/bench/): the twin trains what the benchmark times.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_pytorch import AUTOCAST_DTYPES, EXPECTED_PARAMETERS, make_model  # noqa: E402
from pytorch_datasets import (CIFAR10_FOLDER, FASHION_MNIST_FOLDER, data_root,  # noqa: E402
                              read_cifar10_split, read_idx_split)
from time_to_accuracy import TimeToAccuracy  # noqa: E402


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """train_cifar10's dataset_spec (tools/trainers/trainer_program.cpp)."""
    folder: str        # under the data root
    mean: tuple        # per channel, of the training images scaled to [0, 1]
    std: tuple
    crop_padding: int  # of the random crop


DATASETS = {
    "cifar10": DatasetSpec(CIFAR10_FOLDER, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616), 4),
    "fashion-mnist": DatasetSpec(FASHION_MNIST_FOLDER, (0.2860,), (0.3530,), 2),
}

TEST_BATCH_SIZE = 1000  # train_cifar10's test loader


def read_dataset(name, directory):
    """(train images, train labels, test images, test labels); images uint8 [N, C, H, W]."""
    if name == "cifar10":
        return (*read_cifar10_split(directory, train=True),
                *read_cifar10_split(directory, train=False))
    return (*read_idx_split(directory, "train"), *read_idx_split(directory, "t10k"))


def augment(images, padding, generator):
    """Random crop of the zero-padded images and horizontal flip (probability 0.5) of a uint8
    batch [B, C, H, W], on its device. Both become one gather: output pixel (y, x) of image b
    reads padded pixel (top[b] + y, left[b] + x), with x mirrored where flip[b]."""
    batch, channels, height, width = images.shape
    device = images.device
    padded = F.pad(images, (padding, padding, padding, padding))  # [B, C, H + 2p, W + 2p]
    top = torch.randint(0, 2 * padding + 1, (batch, 1), device=device, generator=generator)
    left = torch.randint(0, 2 * padding + 1, (batch, 1), device=device, generator=generator)
    flip = torch.rand((batch, 1), device=device, generator=generator) < 0.5
    x = torch.arange(width, device=device)
    rows = top + torch.arange(height, device=device)          # [B, H]
    columns = left + torch.where(flip, x.flip(0), x)          # [B, W]
    return padded[torch.arange(batch, device=device)[:, None, None, None],
                  torch.arange(channels, device=device)[None, :, None, None],
                  rows[:, None, :, None], columns[:, None, None, :]]


def normalize(images, mean, std):
    """uint8 [B, C, H, W] to float32: v / 255, then (v - mean[c]) / std[c]."""
    return (images.float() / 255.0 - mean) / std


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cifar10", choices=list(DATASETS))
    parser.add_argument("--data-dir", default="",
                        help="default: <MINIDL_DATA or /usr/share/datasets>/cifar-10-batches-bin "
                             "or .../fashion-mnist")
    parser.add_argument("--model", default="resnet20", choices=["resnet20", "resnet18"])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1, help="peak learning rate")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--target", type=float, default=0.94)
    parser.add_argument("--limit-train", type=int, default=0,
                        help="train on the first N training images only (0: all)")
    parser.add_argument("--limit-test", type=int, default=0,
                        help="evaluate on the first N test images only (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    spec = DATASETS[args.dataset]
    data_dir = args.data_dir or os.path.join(data_root(), spec.folder)

    train_images, train_labels, test_images, test_labels = read_dataset(args.dataset, data_dir)
    train_count, test_count = args.limit_train or None, args.limit_test or None  # None: all
    train_images, train_labels = (train_images[:train_count].to(device),
                                  train_labels[:train_count].to(device))
    test_images, test_labels = (test_images[:test_count].to(device),
                                test_labels[:test_count].to(device))
    mean = torch.tensor(spec.mean, device=device).view(1, -1, 1, 1)
    std = torch.tensor(spec.std, device=device).view(1, -1, 1, 1)

    in_channels = train_images.shape[1]
    model = make_model(args.model, in_channels)
    # EXPECTED_PARAMETERS counts a 3-channel stem: a 3x3 convolution to the first stage's width.
    stem_parameters_dropped = (3 - in_channels) * model.conv1.out_channels * 9
    parameters = sum(p.numel() for p in model.parameters())
    assert parameters == EXPECTED_PARAMETERS[args.model] - stem_parameters_dropped, parameters
    channels_last = device.type == "cuda" and args.precision != "fp32"
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(device, memory_format=memory_format)

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    steps_per_epoch = (len(train_labels) + args.batch_size - 1) // args.batch_size
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=args.epochs * steps_per_epoch, pct_start=0.3,
        anneal_strategy="linear", cycle_momentum=False, div_factor=25, final_div_factor=1e4)
    autocast_enabled = args.precision != "fp32"
    autocast_dtype = AUTOCAST_DTYPES.get(args.precision, torch.float32)
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "fp16")
    shuffle_generator = torch.Generator().manual_seed(args.seed)
    augment_generator = torch.Generator(device).manual_seed(args.seed + 1)

    clock = TimeToAccuracy(args.target, args.epochs)
    for _ in range(args.epochs):
        clock.start_epoch()
        model.train()
        order = torch.randperm(len(train_labels), generator=shuffle_generator).to(device)
        for first in range(0, len(order), args.batch_size):
            batch = order[first:first + args.batch_size]
            images = augment(train_images[batch], spec.crop_padding, augment_generator)
            images = normalize(images, mean, std).contiguous(memory_format=memory_format)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_enabled):
                loss = F.cross_entropy(model(images), train_labels[batch])
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            schedule.step()
        model.eval()
        correct, loss_sum = 0, 0.0
        with torch.no_grad(), torch.autocast(device.type, dtype=autocast_dtype,
                                             enabled=autocast_enabled):
            for first in range(0, len(test_labels), TEST_BATCH_SIZE):
                images = normalize(test_images[first:first + TEST_BATCH_SIZE], mean, std)
                logits = model(images.contiguous(memory_format=memory_format))
                labels = test_labels[first:first + TEST_BATCH_SIZE]
                loss_sum += F.cross_entropy(logits.float(), labels, reduction="sum").item()
                correct += (logits.argmax(1) == labels).sum().item()
        clock.end_epoch(loss_sum / len(test_labels), correct / len(test_labels))
    print(json.dumps({"framework": "pytorch", "model": args.model, "dataset": args.dataset,
                      "epochs": args.epochs, **clock.summary(),
                      "threads": torch.get_num_threads(),
                      "device": "cpu" if device.type == "cpu" else f"cuda:{device.index or 0}",
                      "precision": args.precision, "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
