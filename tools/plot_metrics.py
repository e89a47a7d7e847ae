#!/usr/bin/env python3
"""Draws the loss and accuracy curves of a training run from its --metrics file.

    python3 tools/plot_metrics.py runs/metrics.jsonl -o curves.png [--title "LeNet"]

The file holds one JSON object per epoch (train/metrics_log.h): epoch, train_loss,
test_loss, test_accuracy, ... Runs append to it, so an epoch can appear more than once (a
resumed run logs again the epochs after its checkpoint; a new run starts again at epoch 1): the
last line of each epoch is the one drawn, which is the newest run's. A line that a killed run
left half-written is skipped. Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import sys


def read_metrics(path):
    by_epoch = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                epoch = json.loads(line)
            except json.JSONDecodeError as error:
                if line.startswith('{"epoch":'):  # written by train/metrics_log.cpp, cut short
                    print(f"{path}:{number}: skipping a half-written line", file=sys.stderr)
                    continue
                sys.exit(f"{path}:{number}: not a JSON object ({error})")
            if not isinstance(epoch, dict) or "epoch" not in epoch:
                sys.exit(f"{path}:{number}: every line needs \"epoch\"")
            by_epoch[epoch["epoch"]] = epoch
    epochs = [by_epoch[number] for number in sorted(by_epoch)]
    if not epochs:
        sys.exit(f"{path}: no epochs in the file")
    for key in ("epoch", "train_loss", "test_loss", "test_accuracy"):
        if any(key not in epoch for epoch in epochs):
            sys.exit(f"{path}: every line needs \"{key}\"")
    return epochs


def plot(epochs, output, title):
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    x = [epoch["epoch"] for epoch in epochs]
    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(10, 4))
    loss_axes.plot(x, [e["train_loss"] for e in epochs], marker="o", label="train")
    loss_axes.plot(x, [e["test_loss"] for e in epochs], marker="o", label="test")
    loss_axes.set(xlabel="epoch", ylabel="cross-entropy loss", title="loss")
    loss_axes.legend()
    accuracy_axes.plot(x, [e["test_accuracy"] for e in epochs], marker="o", color="tab:green")
    accuracy_axes.set(xlabel="epoch", ylabel="test accuracy", title="test accuracy")
    for axes in (loss_axes, accuracy_axes):
        axes.grid(alpha=0.3)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(output, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metrics", help="the JSON-lines file written by --metrics")
    parser.add_argument("-o", "--output", default="metrics.png", help="PNG to write")
    parser.add_argument("--title", default="", help="a title above both plots")
    arguments = parser.parse_args()
    plot(read_metrics(arguments.metrics), arguments.output, arguments.title)
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
