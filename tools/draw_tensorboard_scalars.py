#!/usr/bin/env python3
"""Draws scalars of a TensorBoard log folder (the trainers' --tensorboard DIR) as TensorBoard
shows them, one panel per tag, read with TensorBoard's own reader (the tensorboard package's
EventAccumulator), so the picture is what TensorBoard loads from the files.

    python3 tools/draw_tensorboard_scalars.py runs/tb -o scalars.png --tags step/train_loss,loss/test

Needs the tensorboard and matplotlib packages (pip install tensorboard matplotlib).
"""
import argparse
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logdir")
    parser.add_argument("-o", "--output", required=True, help="the picture (.png or .svg)")
    parser.add_argument("--tags", default=None,
                        help="comma-separated scalar tags (default: every scalar tag)")
    args = parser.parse_args()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(args.logdir, size_guidance={"scalars": 0})
    accumulator.Reload()
    available = accumulator.Tags()["scalars"]
    tags = args.tags.split(",") if args.tags else sorted(available)
    missing = [tag for tag in tags if tag not in available]
    if not tags or missing:
        sys.exit(f"{args.logdir}: no scalar tag {missing or tags}; it has {sorted(available)}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, len(tags), figsize=(4.5 * len(tags), 3.4), squeeze=False)
    for panel, tag in zip(panels[0], tags):
        events = accumulator.Scalars(tag)
        panel.plot([e.step for e in events], [e.value for e in events], color="#e8710a",
                   marker="o" if len(events) < 20 else None, linewidth=1.5)
        panel.set_title(tag, fontsize=10)
        panel.set_xlabel("step")
        panel.grid(True, color="#dddddd")
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"{args.output}: {', '.join(f'{t} ({len(accumulator.Scalars(t))} points)' for t in tags)}")


if __name__ == "__main__":
    main()
