#!/usr/bin/env bash
# e2e.trainers.tensorboard: train_lenet --tensorboard writes event files that TensorBoard's own
# reader (the tensorboard package's EventAccumulator) loads, and every scalar of each epoch
# equals the metrics file's value, rounded to float32 as TensorBoard stores it; histograms too;
# and tools/draw_tensorboard_scalars.py and tools/draw_trace.py draw the run's files.
#   tensorboard_e2e.sh <folder of train_lenet> <work dir> <venv dir>
# tensorboard and matplotlib come from PyPI into <venv dir> (created once); without network access the test
# reports itself skipped (exit 77).
set -uo pipefail
tools=$1 work=$2 venv=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
"$tools/train_lenet" --limit-train 2048 --limit-test 512 --batch-size 64 --epochs 2 --workers 1 \
  --checkpoint-dir "" --no-progress --log-every 8 --metrics metrics.jsonl --tensorboard tb \
  --tensorboard-histograms 1 --profile-steps 4:6 --profile-trace trace.json >out.txt 2>err.txt || { cat err.txt; echo "FAIL: train_lenet"; exit 1; }
[[ $(find tb -name 'events.out.tfevents.*' | wc -l) == 1 ]] || { echo "FAIL: not one event file in tb/"; exit 1; }
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import tensorboard, matplotlib" 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    tensorboard matplotlib || { echo "SKIPPED: cannot pip install tensorboard matplotlib into $venv"; exit 77; }
fi
# The docs' pictures are drawn by these two scripts: both draw this run's files.
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$venv/bin/python" "$source_dir/tools/draw_tensorboard_scalars.py" tb -o scalars.png \
  --tags step/train_loss,loss/test,accuracy/test | grep -q "step/train_loss (" ||
  { echo "FAIL: draw_tensorboard_scalars.py"; exit 1; }
"$venv/bin/python" "$source_dir/tools/draw_trace.py" trace.json -o trace.png | grep -q "host spans" ||
  { echo "FAIL: draw_trace.py"; exit 1; }
[[ $(stat -c %s scalars.png) -gt 10000 && $(stat -c %s trace.png) -gt 10000 ]] ||
  { echo "FAIL: the pictures are (nearly) empty"; exit 1; }
"$venv/bin/python" - <<'PYTHON' || exit 1
import json
import struct
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

accumulator = EventAccumulator("tb", size_guidance={"scalars": 0, "histograms": 0})
accumulator.Reload()
tags = accumulator.Tags()
lines = [json.loads(line) for line in open("metrics.jsonl")]
assert len(lines) == 2, lines
as_float32 = lambda value: struct.unpack("f", struct.pack("f", value))[0]
pairs = {"loss/train": "train_loss", "loss/test": "test_loss", "accuracy/test": "test_accuracy",
         "lr": "lr", "throughput/images_per_sec": "images_per_sec"}
for tag, key in pairs.items():
    events = accumulator.Scalars(tag)
    assert [e.step for e in events] == [line["step"] for line in lines], (tag, events)
    for event, line in zip(events, lines):
        assert event.value == as_float32(line[key]), (tag, event.value, line[key])
steps = [e.step for e in accumulator.Scalars("step/train_loss")]
assert steps == list(range(8, lines[-1]["step"] + 1, 8)), steps
for tag in ("step/lr",):
    assert [e.step for e in accumulator.Scalars(tag)] == steps, tag
histograms = tags["histograms"]
assert len(histograms) == 20, histograms  # LeNet's 10 parameters and their gradients
for tag in histograms:
    events = accumulator.Histograms(tag)
    assert [e.step for e in events] == [line["step"] for line in lines], (tag, events)
    assert all(e.histogram_value.num > 0 for e in events), tag
print(f"PASS: {len(pairs)} scalars x {len(lines)} epochs equal metrics.jsonl, "
      f"{len(steps)} step points, {len(histograms)} histograms")
PYTHON
