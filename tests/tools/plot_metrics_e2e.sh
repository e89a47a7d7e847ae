#!/usr/bin/env bash
# e2e.trainers.plot_metrics: tools/plot_metrics.py turns a --metrics file into a PNG.
#   plot_metrics_e2e.sh <metrics.jsonl> <venv dir> <output png>
# matplotlib comes from PyPI into <venv dir> (created once); without network access the test
# reports itself skipped (exit 77).
set -uo pipefail
metrics=$1 venv=$2 output=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[[ -s $metrics ]] || { echo "FAIL: no metrics file $metrics (run e2e.trainers.accuracy first)"; exit 1; }
# Appended runs: the last line of each epoch is drawn, and a half-written line is skipped.
python3 - "$root/tools" <<'PYTHON' || { echo "FAIL: read_metrics of an appended file"; exit 1; }
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
import plot_metrics
line = lambda epoch, loss: json.dumps({"epoch": epoch, "step": epoch, "train_loss": loss,
                                       "test_loss": loss, "test_accuracy": 0.5})
with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
    f.write("\n".join([line(1, 9), line(2, 9), '{"epoch": 3, "st', line(1, 1), line(2, 2)]) + "\n")
    f.flush()
    epochs = plot_metrics.read_metrics(f.name)
assert [(e["epoch"], e["train_loss"]) for e in epochs] == [(1, 1), (2, 2)], epochs
PYTHON
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    matplotlib || { echo "SKIPPED: cannot pip install matplotlib into $venv"; exit 77; }
fi
rm -f "$output"
"$venv/bin/python" "$root/tools/plot_metrics.py" "$metrics" -o "$output" --title "LeNet" || exit 1
# A PNG file starts with these eight bytes.
[[ $(head -c 8 "$output" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
  { echo "FAIL: $output is not a PNG"; exit 1; }
echo "PASS: $output ($(stat -c %s "$output") bytes)"
