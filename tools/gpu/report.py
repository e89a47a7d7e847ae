"""Writes a GPU-kit stage's results into OUTDIR: summary-STAGE.json (the stage's record, below)
and logs-STAGE.tar.xz (every step's log), and prints a table of the steps for the console.

summary-STAGE.json:
    stage, rehearsal, started_utc, wall_seconds, passed (no step failed or timed out),
    versions        what the machine has: GPU, driver, nvcc, cuDNN, NCCL, torch, the kit, ...
    totals          steps by status, and the tests passed/failed/skipped over all steps
    targets         (bench) the issue's ratios, each {value, target, met}; (accuracy) the times
                    to accuracy side by side, and train_gpt's validation loss, wall time and
                    tokens/s next to its twin's, with the loss gap's {value, target, met}
    steps           one record per step (tools/gpu/step_runner.py)
"""
import json
import os
import subprocess

# A log above this keeps its first and last parts, so that the archive stays far below the
# 16 MiB a returned file may have.
MAX_LOG_BYTES = 8 * 1024 * 1024
KEPT_HEAD_BYTES = 1024 * 1024
KEPT_TAIL_BYTES = 4 * 1024 * 1024


def totals(records):
    counts = {"steps": len(records)}
    for status in ("passed", "failed", "timed_out", "skipped"):
        counts[status] = sum(record["status"] == status for record in records)
    for kind in ("passed", "failed", "skipped"):
        counts[f"tests_{kind}"] = sum((record.get("tests") or {}).get(kind) or 0
                                      for record in records)
    return counts


def write(outdir, stage, summary, log_dir):
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"summary-{stage}.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(summary, out, indent=1)
        out.write("\n")
    for name in os.listdir(log_dir):
        _shorten(os.path.join(log_dir, name))
    archive = os.path.join(outdir, f"logs-{stage}.tar.xz")
    subprocess.run(["tar", "-C", os.path.dirname(log_dir), "-cJf", archive,
                    os.path.basename(log_dir)], check=False)
    return path, archive


def _shorten(path):
    size = os.path.getsize(path)
    if size <= MAX_LOG_BYTES:
        return
    with open(path, "rb") as log:
        head = log.read(KEPT_HEAD_BYTES)
        log.seek(size - KEPT_TAIL_BYTES)
        tail = log.read()
    with open(path, "wb") as log:
        log.write(head)
        log.write(f"\n[... {size - len(head) - len(tail)} bytes left out ...]\n".encode())
        log.write(tail)


def _tests_text(tests):
    if not tests:
        return ""
    if "listed" in tests:
        return f"{tests['listed']} listed"
    text = f"{tests['passed']}/{tests['failed']}/{tests['skipped']}"
    return text if tests.get("complete", True) else text + " (cut short)"


def print_table(summary):
    print(f"\n==== {summary['stage']}{' (rehearsal)' if summary['rehearsal'] else ''}: "
          f"{'PASSED' if summary['passed'] else 'FAILED'} in {summary['wall_seconds']:.0f} s ====")
    print(f"{'step':<44} {'status':<10} {'s':>5}  tests p/f/s   note")
    for record in summary["steps"]:
        tests = record.get("tests") or (record.get("rehearsal_run") or {}).get("tests")
        note = record.get("reason") or ""
        figures = record.get("figures") or {}
        for key in ("sanitizer_errors", "racecheck_hazards", "seconds_to_target", "val_loss"):
            if key in figures:
                note = f"{key} {figures[key]} " + note
        print(f"{record['name'][:44]:<44} {record['status']:<10} "
              f"{record.get('wall_seconds') or 0:5.0f}  {_tests_text(tests):<12} {note[:110]}")
        for name in ((record.get("tests") or {}).get("failed_names") or [])[:12]:
            print(f"{'':<44}   failed: {name}")
    for name, target in (summary.get("targets") or {}).items():
        print(f"target {name}: {json.dumps(target)}")
    counts = summary["totals"]
    print(f"steps: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['timed_out']} timed out, {counts['skipped']} skipped; tests: "
          f"{counts['tests_passed']} passed, {counts['tests_failed']} failed, "
          f"{counts['tests_skipped']} skipped")
