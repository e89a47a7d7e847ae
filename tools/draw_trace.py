#!/usr/bin/env python3
"""Draws a Chrome trace (profiler::Profile's export_chrome_trace, the trainers' --profile-trace)
as a picture: the profiling thread's ops, one row per nesting depth, and under them one row per
device stream where the profile recorded the GPU.

    python3 tools/draw_trace.py traces/lenet.json -o trace.png [--span "optimizer step"]

--span NAME draws the time of the first host span of that name (the first step's optimizer
step, a RecordFunction of your own); without it the whole trace. Needs matplotlib.
"""
import argparse
import json
import sys


def read_spans(path):
    try:
        with open(path, encoding="utf-8") as file:
            events = json.load(file)["traceEvents"]
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"{path}: not a Chrome trace with traceEvents ({error})")
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        sys.exit(f"{path}: no complete (\"X\") spans to draw")
    return spans


def depths_of(host_spans):
    """Each host span's nesting depth, from the intervals alone (a span inside another is one
    deeper), so that traces without minidl's depth (PyTorch's) draw too."""
    open_ends, depths = [], []
    for span in sorted(host_spans, key=lambda s: (s["ts"], -s["dur"])):
        while open_ends and open_ends[-1] <= span["ts"]:
            open_ends.pop()
        depths.append((span, len(open_ends)))
        open_ends.append(span["ts"] + span["dur"])
    return depths


def window(spans, name):
    if name is None:
        return min(s["ts"] for s in spans), max(s["ts"] + s["dur"] for s in spans)
    for span in sorted(spans, key=lambda s: s["ts"]):
        if span["name"] == name and span.get("pid", 0) == 0:
            return span["ts"], span["ts"] + span["dur"]
    sys.exit(f"no host span named {name!r} in the trace")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True, help="the picture (.png or .svg)")
    parser.add_argument("--span", help="draw the time of the first host span of this name")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    spans = read_spans(args.trace)
    start, end = window(spans, args.span)
    inside = [s for s in spans if s["ts"] < end and s["ts"] + s["dur"] > start]
    host = [s for s in inside if s.get("pid", 0) == 0 and s.get("tid", 0) == 0]
    device = [s for s in inside if s.get("pid", 0) == 1]
    streams = sorted({s["tid"] for s in device})

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = depths_of(host)
    depth_count = max((depth for _, depth in rows), default=-1) + 1
    row_count = depth_count + len(streams)
    figure, axes = plt.subplots(figsize=(14, 1.0 + 0.45 * row_count))
    colors = plt.get_cmap("tab20").colors
    names = sorted({s["name"] for s in inside})
    color_of = {name: colors[i % len(colors)] for i, name in enumerate(names)}
    scale = 1e-3  # microseconds to milliseconds
    width_ms = (end - start) * scale

    def bar(span, row):
        left = (max(span["ts"], start) - start) * scale
        width = (min(span["ts"] + span["dur"], end) - max(span["ts"], start)) * scale
        axes.barh(row, width, left=left, height=0.8, color=color_of[span["name"]],
                  edgecolor="white", linewidth=0.3)
        if width > width_ms * 0.04:  # a label where it fits
            axes.text(left + width / 2, row, span["name"][: int(width / width_ms * 120)],
                      ha="center", va="center", fontsize=7, clip_on=True)

    for span, depth in rows:
        bar(span, depth)
    for index, stream in enumerate(streams):
        for span in (s for s in device if s["tid"] == stream):
            bar(span, depth_count + index)
    labels = [f"host, depth {d}" for d in range(depth_count)]
    labels += [f"device stream {stream}" for stream in streams]
    axes.set_yticks(range(row_count), labels)
    axes.invert_yaxis()
    axes.set_xlim(0, width_ms)
    axes.set_xlabel("ms")
    axes.set_title(args.title or f"{args.trace}: {len(host)} host spans"
                   + (f", {len(device)} device activities" if device else ""))
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"{args.output}: {len(host)} host spans over {width_ms:.3f} ms"
          + (f", {len(device)} device activities" if device else ""))


if __name__ == "__main__":
    main()
