"""Runs a GPU-kit stage's steps one after another, each under `timeout` with its own budget and
never past the stage's deadline, and records what each did (tools/gpu/stages.py says which steps;
tools/gpu/report.py writes the record out).

A step's record: name, command, status (passed, failed, timed_out or skipped), exit_status,
reason (why it was skipped or failed without running), wall_seconds, budget_seconds, log, and
what its parser read: tests (counts) and figures. A failing step does not stop the later ones.

In a rehearsal (run.sh --rehearse, no GPU) a CUDA step is skipped with reason "no GPU" after the
checks of tools/gpu/command_checks.py on its command line ("checks"); a failed check fails it.
When the step has a CPU form, that runs too, through the same parser ("rehearsal_run"). A step
that needs no GPU runs its reduced form (rehearsal_command) when it has one.
"""
import dataclasses
import os
import shlex
import signal
import subprocess
import time

import command_checks
import log_parsers

# A step is not started with less than this left before the stage's deadline.
MIN_STEP_SECONDS = 10
# Rehearsal runs are small; this caps each.
REHEARSAL_STEP_SECONDS = 90


@dataclasses.dataclass
class Step:
    name: str
    command: list
    budget: int  # seconds, under `timeout`
    parser: str = "none"  # log_parsers.PARSERS
    parser_options: dict = dataclasses.field(default_factory=dict)
    needs_gpu: bool = False
    env: dict = dataclasses.field(default_factory=dict)
    # Without a GPU: for a step that needs none, its reduced form; for a CUDA step, a CPU form
    # whose output goes through the same parser.
    rehearsal_command: list = None
    skip_reason: str = None  # skipped whatever the machine (e.g. no mpirun)
    # Files removed before the step runs (a trainer's --metrics file is appended to).
    fresh_files: list = dataclasses.field(default_factory=list)


def quoted(command):
    return " ".join(shlex.quote(str(part)) for part in command)


class StageRunner:
    def __init__(self, stage, log_dir, deadline_seconds, rehearse, has_gpu, not_checkable,
                 cwd):
        self.stage = stage
        self.log_dir = log_dir
        self.start = time.monotonic()
        self.deadline = self.start + deadline_seconds
        self.rehearse = rehearse
        self.has_gpu = has_gpu
        self.not_checkable = not_checkable
        self.cwd = cwd
        self.records = []

    def elapsed(self):
        return time.monotonic() - self.start

    def add(self, record):
        """A record made elsewhere (the setup, the GPU detection)."""
        self.records.append(record)
        self._print(record)

    def run(self, step):
        record = {"name": step.name, "command": quoted(step.command), "status": None,
                  "exit_status": None, "reason": None, "wall_seconds": 0.0,
                  "budget_seconds": step.budget, "log": None}
        if step.skip_reason:
            record.update(status="skipped", reason=step.skip_reason)
        elif step.needs_gpu and not self.has_gpu:
            record.update(status="skipped", reason="no GPU")
            if self.rehearse:
                self._rehearse_cuda_step(step, record)
            else:
                record["status"] = "failed"  # a GPU run without a GPU is no verdict
        else:
            command = step.command
            budget = step.budget
            if self.rehearse and step.rehearsal_command:
                command = step.rehearsal_command
                record.update(command=quoted(command), gpu_command=quoted(step.command))
            if self.rehearse:
                budget = min(budget, REHEARSAL_STEP_SECONDS)
            record.update(self._execute(step, command, budget, suffix=""))
        self.records.append(record)
        self._print(record)
        return record

    def _rehearse_cuda_step(self, step, record):
        environment = dict(os.environ, **step.env)
        try:
            checks = command_checks.check(step.command, environment, self.not_checkable)
        except Exception as error:  # a bug of the checks must not lose the stage's summary
            checks = [{"check": "the checks ran", "ok": False, "detail": repr(error)}]
        record["checks"] = checks
        failed = [check["check"] for check in checks if check["ok"] is False]
        if failed:
            record.update(status="failed", reason="no GPU; its command line failed the checks: "
                          + "; ".join(failed))
        if step.rehearsal_command:
            budget = min(step.budget, REHEARSAL_STEP_SECONDS)
            run = self._execute(step, step.rehearsal_command, budget, suffix=".cpu")
            run["command"] = quoted(step.rehearsal_command)
            record["rehearsal_run"] = run
            if run["status"] != "passed":
                record.update(status="failed",
                              reason=(record["reason"] or "no GPU") + "; its CPU form "
                              + run["status"])

    def _execute(self, step, command, budget, suffix):
        left = self.deadline - time.monotonic()
        if left < MIN_STEP_SECONDS:
            return {"status": "failed",
                    "reason": f"not run: {left:.0f} s were left of the stage's time"}
        budget = int(min(budget, left))
        for path in step.fresh_files:
            if os.path.exists(path):
                os.remove(path)
        index = len(self.records) + 1
        log_name = f"{index:02d}-{_file_name(step.name)}{suffix}.log"
        log_path = os.path.join(self.log_dir, log_name)
        environment = dict(os.environ, **step.env)
        started = time.monotonic()
        with open(log_path, "w", encoding="utf-8", errors="replace") as log:
            log.write(f"$ {quoted(command)}\n# budget {budget} s"
                      + (f", environment {step.env}" if step.env else "") + "\n")
            log.flush()
            exit_status = _run_under_timeout(command, budget, environment, log, self.cwd)
        wall = time.monotonic() - started
        # `timeout` exits 124 (TERM) or 137 (KILL) at the budget; a command killed by a signal
        # makes it kill itself with that signal (a negative status here).
        reason = None
        if (exit_status in (124, 137) or exit_status < 0) and wall >= budget - 1:
            status = "timed_out"
        elif exit_status == 0:
            status = "passed"
        else:
            status = "failed"
            if exit_status < 0:
                reason = f"killed by signal {-exit_status}"
        result = {"status": status, "exit_status": exit_status, "wall_seconds": round(wall, 1),
                  "budget_seconds": budget, "log": log_name, "reason": reason}
        with open(log_path, encoding="utf-8", errors="replace") as log:
            result.update(log_parsers.parse(step.parser, log.read(), step.parser_options))
        tests = result.get("tests", {})
        if status == "passed" and tests.get("failed"):
            result["status"] = "failed"  # e.g. a test binary that crashed after printing OK
        return result

    def _print(self, record):
        line = f"[{self.elapsed():5.0f} s] {record['name']}: {record['status']}"
        if record.get("wall_seconds"):
            line += f" in {record['wall_seconds']:.0f} s"
        tests = record.get("tests") or (record.get("rehearsal_run") or {}).get("tests")
        if tests and "passed" in tests:
            line += (f" ({tests['passed']} passed, {tests['failed']} failed,"
                     f" {tests['skipped']} skipped)")
        if record.get("reason"):
            line += f" - {record['reason']}"
        print(line, flush=True)


def _file_name(name):
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-")[:60]


def _run_under_timeout(command, budget, environment, log, cwd):
    """`timeout` sends TERM at the budget and KILL 10 s later; the step's whole process group is
    killed afterwards, so that nothing it started outlives it."""
    try:
        process = subprocess.Popen(["timeout", "--kill-after=10", str(budget)] + list(command),
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=environment, cwd=cwd, start_new_session=True)
    except OSError as error:
        log.write(f"could not start: {error}\n")
        return 127
    try:
        exit_status = process.wait(timeout=budget + 20)
    except subprocess.TimeoutExpired:
        exit_status = 137
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass  # nothing of the group is left
    process.wait()
    return exit_status
