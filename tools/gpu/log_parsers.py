"""What a GPU-kit step's log says, as JSON-ready dicts (tools/gpu/stages.py names a parser per
step). Each parser takes the log's text and the step's parser options, and returns
{"tests": {...}} and/or {"figures": {...}}; a log a parser cannot read gives empty counts, never
an exception, so that one odd log cannot lose the whole summary.

    ctest            counts of CTest's run (or of its -N listing), and the failed tests' names
    gtest            counts of one GoogleTest program's run, which may have crashed part-way, and
                     compute-sanitizer's error and hazard counts when it ran under one
    mpi_gtest        gtest's counts of a GoogleTest program under mpirun (rank 0 prints the run;
                     another rank only its failures, "[rank N] file:line: failure"), and what
                     tools/gpu/with_kit_mpi_only.sh said: the mpirun and libmpi used, and whether
                     the system's Open MPI was masked
    bench_compare    tools/bench/bench_compare.py's markdown tables, one row per model and PyTorch mode
    bench_json       tools/bench's JSON lines
    trainer          train_lenet/train_cifar10: the summary line, and from the --metrics file the
                     time to the target accuracy, counted as tools/pytorch/time_to_accuracy.py counts it
    pytorch_trainer  the JSON line the PyTorch twins (tools/pytorch/train_*_pytorch.py) print last
    gpt_summary      the JSON line train_gpt and tools/pytorch/train_gpt_pytorch.py print last,
                     under the same names for both; of a run cut short, the last evaluation seen
"""
import json
import re

MAX_NAMES = 50  # failed test names kept per step


def parse(parser, text, options):
    return PARSERS[parser](text, options or {})


def _numbers(pattern, text):
    return [int(match) for match in re.findall(pattern, text, flags=re.MULTILINE)]


def ctest(text, _options):
    listed = _numbers(r"^Total Tests: (\d+)$", text)
    if listed:
        return {"tests": {"listed": listed[-1]}}
    # "97% tests passed, 3 tests failed out of 124"; skipped tests count as passed there. CTest
    # 4 leaves the failures out when there are none: "100% tests passed out of 154".
    summary = re.findall(r"^\d+% tests passed(?:, (\d+) tests? failed)? out of (\d+)", text,
                         flags=re.MULTILINE)
    # "\t724 - Suite.Name (Failed) gpu": the test's labels follow a failed one.
    failed_names = re.findall(r"^\s*\d+ - (\S+) \(([^)]*)\)(?:[ \t]+\S+)*$",
                              text.split("The following tests FAILED:")[-1], flags=re.MULTILINE) \
        if "The following tests FAILED:" in text else []
    skipped = len(re.findall(r"^\s*\d+ - \S+ \((Skipped|Disabled)\)$", text, flags=re.MULTILINE))
    if not summary:
        # Cut short (a timeout): count the result lines printed so far.
        passed = len(re.findall(r"Test +#\d+: \S+ \.+ +Passed", text))
        failed = len(re.findall(r"Test +#\d+: \S+ \.+\*+(?!Skipped|Not Run|Disabled)\w", text))
        skipped = len(re.findall(r"Test +#\d+: \S+ \.+\*+Skipped", text))
        return {"tests": {"passed": passed, "failed": failed, "skipped": skipped,
                          "total": None, "complete": False}}
    failed, total = (int(value or 0) for value in summary[-1])
    return {"tests": {"passed": total - failed - skipped, "failed": failed, "skipped": skipped,
                      "total": total, "complete": True,
                      "failed_names": [f"{name} ({why})" for name, why in failed_names
                                       if why not in ("Skipped", "Disabled")][:MAX_NAMES]}}


def gtest(text, _options):
    started = re.findall(r"^\[ RUN      \] (\S+)", text, flags=re.MULTILINE)
    passed = re.findall(r"^\[       OK \] (\S+) \(", text, flags=re.MULTILINE)
    # "[  FAILED  ] Suite.Name (3 ms)", or "... Suite.Name/0, where GetParam() = ... (3 ms)";
    # the list at the end has no time.
    failed = re.findall(r"^\[  FAILED  \] (\S+?),? .*\(\d+ ms\)$", text, flags=re.MULTILINE)
    skipped = re.findall(r"^\[  SKIPPED \] (\S+) \(", text, flags=re.MULTILINE)
    finished = set(passed) | set(failed) | set(skipped)
    # A test that started and never finished is where the program died (a crash, a timeout).
    unfinished = [name for name in started if name not in finished]
    result = {"tests": {"passed": len(passed), "failed": len(failed) + len(unfinished),
                        "skipped": len(skipped), "total": len(started),
                        "complete": "[==========]" in text.split("[ RUN      ]")[-1],
                        "failed_names": (failed + [f"{name} (did not finish)"
                                                   for name in unfinished])[:MAX_NAMES]}}
    figures = {}
    errors = _numbers(r"ERROR SUMMARY: (\d+) errors?", text)
    if errors:
        figures["sanitizer_errors"] = errors[-1]
    hazards = re.findall(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, "
                         r"(\d+) warnings?\)", text)
    if hazards:
        figures["racecheck_hazards"], figures["racecheck_errors"], \
            figures["racecheck_warnings"] = (int(value) for value in hazards[-1])
    if figures:
        result["figures"] = figures
    return result


def mpi_gtest(text, options):
    result = gtest(text, options)
    figures = result.setdefault("figures", {})
    other_ranks = sorted({int(rank) for rank in
                          re.findall(r"^\[rank (\d+)\] .*: failure$", text, flags=re.MULTILINE)})
    if other_ranks:
        figures["failed_on_ranks"] = other_ranks
        if not result["tests"]["failed"]:
            result["tests"]["failed"] = 1  # rank 0 passed what another rank failed
    kit = {}
    mpirun = re.search(r"^kit Open MPI: mpirun (\S+) -> (\S+)$", text, flags=re.MULTILINE)
    if mpirun:
        kit["mpirun"] = mpirun.group(2)
    libraries = dict(re.findall(r"^kit Open MPI: (\S+): libmpi => (\S+)$", text,
                                flags=re.MULTILINE))
    if libraries:
        kit["libmpi"] = libraries
    failed = re.search(r"^kit Open MPI: FAILED: (.*)$", text, flags=re.MULTILINE)
    if failed:
        kit["failed"] = failed.group(1)
    masking = re.search(r"^system Open MPI: (masked|none to mask|not masked)(?: \((.*)\))?$", text,
                        flags=re.MULTILINE)
    if masking:
        figures["system_open_mpi"] = masking.group(1)
        figures["system_open_mpi_detail"] = masking.group(2)
    if kit:
        figures["kit_open_mpi"] = kit
    return result


def _cell(text):
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _key(title):
    return re.sub(r"[^a-z0-9]+", "_", title.lower().replace("/", " per ")).strip("_")


def bench_compare(text, _options):
    """Every markdown table: {table title key: {"<model> <PyTorch mode>": {column: value}}}; the
    first table is the timing ("steps"), a second is the --profile table ("profile"). The
    --profile run's kernel tables, each under its line "Top kernels per step, <model>, <side>:",
    go to "top_kernels": {"<model>, <side>": [{column: value}, ...]}; the lines that say what
    minidl's peak held go to "peak_by_op": {model: the line's list}."""
    tables, header, kernel_tables, kernel_rows, title = [], None, {}, None, ""
    peak_by_op = {}
    for line in text.splitlines():
        by_op = re.match(r"^(\S+): minidl's allocated peak by op \(MiB in blocks\): (.*)$", line)
        if by_op:
            peak_by_op[by_op.group(1)] = by_op.group(2)
        if not line.startswith("|"):
            header = kernel_rows = None
            if line.strip():
                title = line.strip()
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if set("".join(cells)) <= set("-"):
            continue
        if cells[0] == "model":
            header = [_key(cell) for cell in cells]
            tables.append({})
        elif cells[0] == "kernel" and title.startswith("Top kernels per step, "):
            header = [_key(cell) for cell in cells]
            kernel_rows = kernel_tables.setdefault(
                title.removeprefix("Top kernels per step, ").rstrip(":"), [])
        elif header and kernel_rows is not None and len(cells) == len(header):
            kernel_rows.append({name: _cell(value) for name, value in zip(header, cells)})
        elif header and len(cells) == len(header):
            row = dict(zip(header, cells))
            key = f"{row.pop('model')} {row.pop('pytorch_mode', 'eager')}"
            tables[-1][key] = {name: _cell(value) for name, value in row.items()}
    figures = {}
    for name, table in zip(("steps", "profile"), tables):
        figures[name] = table
    if kernel_tables:
        figures["top_kernels"] = kernel_tables
    if peak_by_op:
        figures["peak_by_op"] = peak_by_op
    heading = re.search(r"^\d{4}-\d\d-\d\d .*UTC, .*$", text, flags=re.MULTILINE)
    if heading:
        figures["heading"] = heading.group(0)
    return {"figures": figures}


def _json_lines(text):
    rows = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return rows


def bench_json(text, _options):
    """{"<model> <precision>[ channels-last]": the bench's JSON row}."""
    figures = {}
    for row in _json_lines(text):
        if "model" in row and "step_ms_median" in row:
            layout = " channels-last" if row.get("channels_last") else ""
            figures[f"{row['model']} {row.get('precision', '?')}{layout}"] = row
    return {"figures": figures}


def time_to_target(epochs, target):
    """The seconds of the epochs up to the first whose test accuracy reached `target` (None when
    none did), each epoch's seconds including its evaluation, as tools/pytorch/time_to_accuracy.py."""
    total = 0.0
    for epoch in epochs:
        total += epoch.get("seconds") or 0.0
        if (epoch.get("test_accuracy") or 0.0) >= target:
            return total
    return None


def trainer(text, options):
    figures = {}
    rows = [row for row in _json_lines(text) if "test_accuracy" in row and "epochs" in row]
    if rows:
        figures.update(rows[-1])
    epochs = []
    try:
        with open(options["metrics"], encoding="utf-8") as metrics:
            epochs = [json.loads(line) for line in metrics if line.strip()]
    except (KeyError, OSError, json.JSONDecodeError) as error:
        figures["metrics_error"] = str(error)
    target = options.get("target")
    if epochs:
        figures["epoch_seconds"] = [epoch.get("seconds") for epoch in epochs]
        figures["epoch_test_accuracy"] = [epoch.get("test_accuracy") for epoch in epochs]
    if target is not None:
        figures["target"] = target
        figures["seconds_to_target"] = time_to_target(epochs, target)
    return {"figures": figures}


def pytorch_trainer(text, _options):
    rows = [row for row in _json_lines(text) if row.get("framework") == "pytorch"]
    return {"figures": rows[-1] if rows else {}}


# train_gpt's evaluation line (the Trainer's, train/trainer.cpp) and the twin's.
GPT_EVALUATION_LINES = (r"^epoch \d+/\d+.*  test_loss (\S+)  ", r"^step \d+: val loss (\S+)$")


def gpt_summary(text, _options):
    """{val_loss, tokens_per_sec, wall_seconds, train_seconds, steps, ..., complete}: train_gpt's
    summary (val_loss, tokens_per_sec, wall_seconds) or the twin's (val_loss, val_losses,
    tokens_per_sec, train_s, wall_s), the twin's names given train_gpt's; train_seconds is the
    twin's alone (train_gpt's time without evaluations is not in its summary). Without a summary
    (a crash, a timeout): complete false, and the last validation loss printed, if any."""
    rows = [row for row in _json_lines(text) if row.get("model") == "gpt" and "val_loss" in row]
    if not rows:
        figures = {"complete": False}
        losses = [float(loss) for pattern in GPT_EVALUATION_LINES
                  for loss in re.findall(pattern, text, flags=re.MULTILINE)]
        if losses:
            figures["last_val_loss"] = losses[-1]
        return {"figures": figures}
    row = rows[-1]
    figures = {"complete": True, "framework": row.get("framework", "minidl")}
    for name, names in (("val_loss", ("val_loss",)), ("tokens_per_sec", ("tokens_per_sec",)),
                        ("wall_seconds", ("wall_seconds", "wall_s")),
                        ("train_seconds", ("train_s",)), ("train_loss", ("train_loss",)),
                        ("steps", ("steps",)), ("params", ("params",)),
                        ("device", ("device",)), ("precision", ("precision",)),
                        ("cuda_graph", ("cuda_graph",)), ("val_losses", ("val_losses",))):
        figures[name] = next((row[key] for key in names if key in row), None)
    return {"figures": figures}


def none(_text, _options):
    return {}


PARSERS = {"ctest": ctest, "gtest": gtest, "mpi_gtest": mpi_gtest, "bench_compare": bench_compare,
           "bench_json": bench_json, "trainer": trainer, "pytorch_trainer": pytorch_trainer,
           "gpt_summary": gpt_summary, "none": none}
