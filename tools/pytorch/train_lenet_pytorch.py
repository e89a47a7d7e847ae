#!/usr/bin/env python3
"""train_lenet's default recipe in PyTorch eager, for side-by-side epoch times and
time-to-accuracy on the same machine:

    python3 tools/pytorch/train_lenet_pytorch.py [--epochs 6] [--threads 2] [--device cpu]
        [--data-dir /usr/share/datasets/fashion-mnist] [--target 0.89]

LeNet-5 (tools/bench/bench_pytorch.py's, the same as models::LeNet) on Fashion-MNIST, normalised with
mean 0.2860 and std 0.3530, batch 128 reshuffled every epoch, SGD lr 0.05, momentum 0.9,
Nesterov, weight decay 5e-4, cosine schedule stepped per batch down to 0 over all steps; the
test set evaluated after each epoch. Prints a line per epoch and, last, one JSON object with
the epoch seconds and the seconds until the test accuracy first reached --target.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# The model is bench_pytorch.py's (tools/bench/): the twin trains what the benchmark times.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_pytorch import LeNet  # noqa: E402
from pytorch_datasets import read_idx_split  # noqa: E402
from time_to_accuracy import TimeToAccuracy  # noqa: E402


def load_split(directory, prefix):
    images, labels = read_idx_split(directory, prefix)
    images = images.numpy().astype(np.float32) / 255.0
    images = (images - 0.2860) / 0.3530
    return torch.from_numpy(images), labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--target", type=float, default=0.89)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    train_images, train_labels = load_split(args.data_dir, "train")
    test_images, test_labels = load_split(args.data_dir, "t10k")
    train_images, train_labels = train_images.to(device), train_labels.to(device)
    test_images, test_labels = test_images.to(device), test_labels.to(device)

    model = LeNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    steps_per_epoch = (len(train_labels) + args.batch_size - 1) // args.batch_size
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs * steps_per_epoch)
    generator = torch.Generator().manual_seed(args.seed)
    clock = TimeToAccuracy(args.target, args.epochs)
    for _ in range(args.epochs):
        clock.start_epoch()
        model.train()
        order = torch.randperm(len(train_labels), generator=generator).to(device)
        for first in range(0, len(order), args.batch_size):
            batch = order[first:first + args.batch_size]
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(train_images[batch]), train_labels[batch]).backward()
            optimizer.step()
            schedule.step()
        model.eval()
        correct, loss_sum = 0, 0.0
        with torch.no_grad():
            for first in range(0, len(test_labels), 1000):
                logits = model(test_images[first:first + 1000])
                labels = test_labels[first:first + 1000]
                loss_sum += F.cross_entropy(logits, labels, reduction="sum").item()
                correct += (logits.argmax(1) == labels).sum().item()
        clock.end_epoch(loss_sum / len(test_labels), correct / len(test_labels))
    print(json.dumps({"framework": "pytorch", "model": "lenet", "epochs": args.epochs,
                      **clock.summary(), "threads": torch.get_num_threads(),
                      "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
