#!/usr/bin/env python3
"""Tests of tools/gpu/log_parsers.py and of the bench and accuracy stages' targets on logs as
the GPU machine writes them, since no machine here writes them: CTest and GoogleTest runs that
failed, crashed or were cut short, compute-sanitizer's summaries, tools/bench/bench_compare.py's
tables printed by its own code from made-up rows (so that a change of its columns shows here, not
as a null target after a GPU run), and the JSON lines that train_gpt and its PyTorch twin print
last, whole and cut short.

    python3 tools/gpu/log_parsers_test.py
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import bench_compare  # noqa: E402  tools/bench/bench_compare.py
import command_checks  # noqa: E402
import log_parsers  # noqa: E402
import stages  # noqa: E402

CTEST_WITH_A_FAILURE = """\
      Start  1: Suite.Passes
 1/3 Test  #1: Suite.Passes .....................   Passed    0.01 sec
 2/3 Test  #2: Suite.Fails ......................***Failed    0.02 sec
 3/4 Test  #3: Suite.Skips ......................***Skipped   0.01 sec
 4/4 Test  #4: Suite.AlsoFails ..................***Failed    0.02 sec

50% tests passed, 2 tests failed out of 4

Total Test time (real) =   0.05 sec

The following tests did not run:
\t  3 - Suite.Skips (Skipped)

The following tests FAILED:
\t  2 - Suite.Fails (Failed)        gpu unit
\t  4 - Suite.AlsoFails (Failed)    gpu
Errors while running CTest
"""

CTEST_CUT_SHORT = """\
 1/9 Test  #1: Suite.A ..........................   Passed    0.01 sec
 2/9 Test  #4: Suite.B ..........................***Timeout 120.01 sec
 3/9 Test  #2: Suite.C ..........................***Skipped   0.01 sec
 4/9 Test  #3: Suite.D ..........................***Exception: SegFault  0.30 sec
"""

GTEST_UNDER_MEMCHECK = """\
========= COMPUTE-SANITIZER
Running main() from ./googletest/src/gtest_main.cc
[==========] Running 4 tests from 2 test suites.
[ RUN      ] Suite.Passes
[       OK ] Suite.Passes (5 ms)
[ RUN      ] Suite.Skips
[  SKIPPED ] Suite.Skips (0 ms)
[ RUN      ] Dtypes/Param.Fails/0
========= Invalid __global__ read of size 4 bytes
=========     at fused_sgd_kernel+0x90
[  FAILED  ] Dtypes/Param.Fails/0, where GetParam() = 4-byte object <00-00 80-3F> (10 ms)
[ RUN      ] Suite.Crashes
========= Program hit cudaErrorIllegalAddress (error 700)
========= ERROR SUMMARY: 7 errors
"""

RACECHECK_CLEAN = """\
[==========] Running 1 test from 1 test suite.
[ RUN      ] ReduceCuda.Sum
[       OK ] ReduceCuda.Sum (8 ms)
[==========] 1 test from 1 test suite ran. (8 ms total)
[  PASSED  ] 1 test.
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""

# tools/gpu/with_kit_mpi_only.sh's lines, then rank 0's GoogleTest run under mpirun, and rank 1's
# failure as main_mpi.cpp prints it.
MPI_GTEST_MASKED_WITH_A_FAILURE_ON_RANK_1 = """\
kit Open MPI: mpirun /tmp/w/deps/root/usr/bin/mpirun -> /tmp/w/deps/root/usr/bin/orterun
kit Open MPI: minidl_distributed_mpi_tests: libmpi => /tmp/w/deps/root/usr/lib/libmpi.so.40
system Open MPI: masked (1313 files of openmpi-bin libopenmpi3)
Running main() from main_mpi.cpp
[==========] Running 2 tests from 2 test suites.
[ RUN      ] MpiDataParallel.LeNetOnRanksMatchesOneProcessOnTheWholeBatch
[       OK ] MpiDataParallel.LeNetOnRanksMatchesOneProcessOnTheWholeBatch (210 ms)
[ RUN      ] MpiDataParallelCuda.LeNetOnRanksSharingAGpuMatchesOneProcessOnTheWholeBatch
[  SKIPPED ] MpiDataParallelCuda.LeNetOnRanksSharingAGpuMatchesOneProcessOnTheWholeBatch (0 ms)
[==========] 2 tests from 2 test suites ran. (210 ms total)
[  PASSED  ] 1 test.
[rank 1] tests/distributed/mpi/ddp_mpi.cpp:42: failure
Value of: testing::all_close(...)
"""

MPI_OUTSIDE_THE_KIT = """\
kit Open MPI: mpirun /usr/bin/mpirun -> /usr/bin/orterun
kit Open MPI: FAILED: resolved outside the kit's /tmp/w/deps/root: mpirun (/usr/bin/orterun)
"""


def bench_compare_output(arguments, ours, theirs):
    """What tools/bench/bench_compare.py prints for these rows of bench and bench_pytorch.py."""
    def fake_run(command, _environment):
        return theirs if "bench_pytorch.py" in " ".join(command) else ours

    output = io.StringIO()
    with mock.patch.object(bench_compare, "run_json_lines", fake_run), \
            mock.patch.object(sys, "argv", ["bench_compare.py", *arguments]), \
            contextlib.redirect_stdout(output):
        bench_compare.main()
    return output.getvalue()


def bench_row(framework, model, step_ms, images_per_sec, peak_mib, kernels=50.0):
    return {"framework": framework, "model": model, "batch_size": 512, "step_ms_median": step_ms,
            "images_per_sec": images_per_sec, "peak_allocated_bytes": peak_mib * 2**20,
            "peak_reserved_bytes": 2 * peak_mib * 2**20, "warmup_seconds": 12.5,
            "torch_version": "2.11.0", "profile": {
                "kernels_per_step": kernels, "kernel_ms_per_step": 1.0, "busy_ms_per_step": 1.5,
                "gap_ms_per_step": 0.5, "top_kernels": [
                    {"name": f"{framework}_gemm<a|b>", "ms_per_step": 0.75, "calls_per_step": 4.0},
                    {"name": "x" * 130, "ms_per_step": 0.125, "calls_per_step": 1.0}]}}


def compare_record(name, arguments, ours, theirs):
    text = bench_compare_output(arguments, [ours], [theirs])
    return {"name": name, "status": "passed",
            **log_parsers.parse("bench_compare", text, {})}


class CtestTest(unittest.TestCase):
    def test_counts_a_run_with_a_failure_and_a_skip(self):
        tests = log_parsers.parse("ctest", CTEST_WITH_A_FAILURE, {})["tests"]
        self.assertEqual((tests["passed"], tests["failed"], tests["skipped"], tests["total"]),
                         (1, 2, 1, 4))
        self.assertEqual(tests["failed_names"],
                         ["Suite.Fails (Failed)", "Suite.AlsoFails (Failed)"])
        self.assertTrue(tests["complete"])

    def test_reads_ctest_4s_summary_without_failures(self):
        text = ("1/2 Test #1: Suite.A ....   Passed    0.01 sec\n"
                "2/2 Test #2: Suite.B ....***Skipped   0.01 sec\n\n"
                "100% tests passed out of 2\n\nThe following tests did not run:\n"
                "\t  2 - Suite.B (Skipped)\n")
        tests = log_parsers.parse("ctest", text, {})["tests"]
        self.assertEqual((tests["passed"], tests["failed"], tests["skipped"], tests["total"]),
                         (1, 0, 1, 2))
        self.assertTrue(tests["complete"])

    def test_counts_the_results_printed_before_a_timeout(self):
        tests = log_parsers.parse("ctest", CTEST_CUT_SHORT, {})["tests"]
        self.assertEqual((tests["passed"], tests["failed"], tests["skipped"]), (1, 2, 1))
        self.assertFalse(tests["complete"])

    def test_reads_a_listing(self):
        self.assertEqual(log_parsers.parse("ctest", "Test #1: A\n\nTotal Tests: 12\n", {}),
                         {"tests": {"listed": 12}})


class GtestTest(unittest.TestCase):
    def test_a_crash_under_memcheck_fails_the_test_that_did_not_finish(self):
        result = log_parsers.parse("gtest", GTEST_UNDER_MEMCHECK, {})
        tests = result["tests"]
        self.assertEqual((tests["passed"], tests["failed"], tests["skipped"], tests["total"]),
                         (1, 2, 1, 4))
        self.assertEqual(tests["failed_names"],
                         ["Dtypes/Param.Fails/0", "Suite.Crashes (did not finish)"])
        self.assertFalse(tests["complete"])
        self.assertEqual(result["figures"], {"sanitizer_errors": 7})

    def test_reads_racecheck_summary(self):
        result = log_parsers.parse("gtest", RACECHECK_CLEAN, {})
        self.assertEqual((result["tests"]["passed"], result["tests"]["failed"]), (1, 0))
        self.assertTrue(result["tests"]["complete"])
        self.assertEqual(result["figures"], {"racecheck_hazards": 0, "racecheck_errors": 0,
                                             "racecheck_warnings": 0})


class MpiGtestTest(unittest.TestCase):
    def test_another_ranks_failure_fails_the_run_and_the_kits_open_mpi_is_named(self):
        result = log_parsers.parse("mpi_gtest", MPI_GTEST_MASKED_WITH_A_FAILURE_ON_RANK_1, {})
        tests = result["tests"]
        self.assertEqual((tests["passed"], tests["failed"], tests["skipped"], tests["total"]),
                         (1, 1, 1, 2))
        figures = result["figures"]
        self.assertEqual(figures["failed_on_ranks"], [1])
        self.assertEqual(figures["system_open_mpi"], "masked")
        self.assertEqual(figures["system_open_mpi_detail"], "1313 files of openmpi-bin libopenmpi3")
        self.assertEqual(figures["kit_open_mpi"], {
            "mpirun": "/tmp/w/deps/root/usr/bin/orterun",
            "libmpi": {"minidl_distributed_mpi_tests": "/tmp/w/deps/root/usr/lib/libmpi.so.40"}})

    def test_an_mpirun_outside_the_kit_is_named_and_no_test_ran(self):
        result = log_parsers.parse("mpi_gtest", MPI_OUTSIDE_THE_KIT, {})
        self.assertEqual(result["tests"]["total"], 0)
        self.assertEqual(result["figures"]["kit_open_mpi"]["failed"],
                         "resolved outside the kit's /tmp/w/deps/root: mpirun (/usr/bin/orterun)")
        self.assertNotIn("system_open_mpi", result["figures"])

    def test_a_namespace_that_cannot_be_made_says_why(self):
        text = ("system Open MPI: not masked (unshare -m: unshare failed: Operation not permitted;"
                " 1313 files of libopenmpi3 stay visible)\n")
        figures = log_parsers.parse("mpi_gtest", text, {})["figures"]
        self.assertEqual(figures["system_open_mpi"], "not masked")
        self.assertTrue(figures["system_open_mpi_detail"].startswith("unshare -m: unshare failed"))


class MpirunCommandChecksTest(unittest.TestCase):
    """command_checks on `mpirun OPTIONS PROGRAM ARGS`, with stand-ins for mpirun and a
    GoogleTest program: mpirun's option values are not taken for the program."""

    def test_checks_mpirun_then_the_program_it_starts(self):
        with tempfile.TemporaryDirectory() as folder:
            def script(name, body):
                path = os.path.join(folder, name)
                with open(path, "w", encoding="utf-8") as file:
                    file.write("#!/bin/sh\n" + body)
                os.chmod(path, 0o755)
                return path

            script("mpirun", 'echo "mpirun (Open MPI) 4.1.4"\n')
            lists_one_test = 'case "$*" in *--gtest_list_tests*) printf "S.\\n  C\\n";; esac\n'
            program = script("minidl_stand_in_tests", lists_one_test)
            environment = dict(os.environ, PATH=folder + os.pathsep + os.environ["PATH"])
            checks = command_checks.check(
                ["env", "X=1", "mpirun", "--oversubscribe", "-np", "2", "--mca", "btl", "self",
                 program, "--gtest_filter=Suite.*"], environment)
        self.assertEqual([(check["check"], check["ok"]) for check in checks], [
            ("mpirun --version runs", True),
            (f"{program} exists and is executable", True),
            ("minidl_stand_in_tests --gtest_filter=Suite.* lists tests", True)])

    def test_no_mpirun_is_a_failed_check(self):
        checks = command_checks.check(["mpirun", "-np", "2", "/bin/true"],
                                      dict(os.environ, PATH="/nonexistent"))
        self.assertEqual([(check["check"], check["ok"]) for check in checks],
                         [("mpirun is on PATH", False)])


class BenchTest(unittest.TestCase):
    def test_bench_compare_tables_feed_every_target(self):
        cuda = ["--device", "cuda"]
        records = [
            compare_record("lenet fp32: minidl (CUDA graph) vs PyTorch",
                           cuda + ["--model", "lenet", "--profile",
                                   "--pytorch-mode", "eager,reduce-overhead"],
                           bench_row("minidl", "lenet", 0.2, 1000, 10, kernels=30.0),
                           bench_row("pytorch", "lenet", 1.0, 200, 20)),
            compare_record("resnet18 b512 bf16 channels-last vs PyTorch",
                           cuda + ["--model", "resnet18", "--precision", "bf16"],
                           bench_row("minidl", "resnet18", 20.0, 1200, 900) | {
                               "peak_allocated_by_op": [
                                   {"op": "conv2d", "bytes": 600 * 2**20, "blocks": 20},
                                   {"op": "", "bytes": 2**19, "blocks": 3}]},
                           bench_row("pytorch", "resnet18", 22.0, 1000, 1000)),
            compare_record("resnet18 b512 fp32 vs PyTorch", cuda + ["--model", "resnet18"],
                           bench_row("minidl", "resnet18", 50.0, 500, 1500),
                           bench_row("pytorch", "resnet18", 60.0, 400, 1600)),
            compare_record("resnet18 b512 bf16 channels-last vs PyTorch max-autotune",
                           cuda + ["--model", "resnet18", "--precision", "bf16",
                                   "--pytorch-mode", "max-autotune"],
                           bench_row("minidl", "resnet18", 20.0, 1200, 900),
                           bench_row("pytorch", "resnet18", 18.0, 1500, 600)),
            compare_record("resnet18 b512 fp32 TF32 vs PyTorch",
                           cuda + ["--model", "resnet18", "--tf32", "on"],
                           bench_row("minidl", "resnet18", 30.0, 800, 1500),
                           bench_row("pytorch", "resnet18", 40.0, 600, 1600)),
            compare_record("resnet18 b512 fp16 channels-last vs PyTorch",
                           cuda + ["--model", "resnet18", "--precision", "fp16"],
                           bench_row("minidl", "resnet18", 30.0, 900, 900),
                           bench_row("pytorch", "resnet18", 25.0, 1100, 1000)),
            {"name": "lenet fp32: minidl eager (--cuda-graph off)", "status": "passed",
             **log_parsers.parse("bench_json", json.dumps(bench_row("minidl", "lenet", 0.5, 500, 10)
                                                          | {"precision": "fp32"}), {})},
        ]
        lenet = records[0]["figures"]
        self.assertEqual(set(lenet["steps"]), {"lenet eager", "lenet reduce-overhead"})
        self.assertEqual(lenet["steps"]["lenet eager"]["minidl_ms_per_step"], 0.2)
        self.assertEqual(lenet["steps"]["lenet eager"]["pytorch_warm_up_s"], 12.5)
        self.assertEqual(lenet["steps"]["lenet eager"]["minidl_peak_reserved_mb"], 20)
        self.assertEqual(lenet["profile"]["lenet reduce-overhead"]["minidl_kernels"], 30.0)
        self.assertEqual(set(lenet["top_kernels"]),
                         {"lenet, minidl", "lenet, PyTorch eager", "lenet, PyTorch reduce-overhead"})
        self.assertEqual(lenet["top_kernels"]["lenet, minidl"][0],
                         {"kernel": "minidl_gemm<a/b>", "ms_per_step": 0.75, "calls_per_step": 4.0})
        self.assertEqual(lenet["top_kernels"]["lenet, PyTorch eager"][1]["kernel"], "x" * 117 + "...")
        self.assertNotIn("top_kernels", records[1]["figures"])  # no --profile
        self.assertEqual(records[1]["figures"]["peak_by_op"],
                         {"resnet18": "conv2d 600 MiB in 20, (outside every op) 0 MiB in 3"})
        self.assertNotIn("peak_by_op", records[2]["figures"])  # bench recorded none
        targets = stages.bench_targets(records)
        self.assertEqual(targets["lenet_fp32_graph_step_over_pytorch_eager"],
                         {"value": 0.2, "target": "<= 0.25", "met": True})
        self.assertEqual(targets["lenet_fp32_graph_step_over_pytorch_reduce_overhead"]["value"],
                         0.2)
        self.assertEqual(targets["resnet18_bf16_images_per_s_over_max_autotune"],
                         {"value": 0.8, "target": ">= 1.0", "met": False})
        self.assertEqual(targets["resnet18_bf16_peak_memory_over_max_autotune"]["value"], 1.5)
        self.assertEqual(targets["resnet18_fp32_tf32_step_over_pytorch"],
                         {"value": 0.75, "target": "<= 1.0", "met": True})
        self.assertEqual(targets["lenet_fp32_eager_step_over_pytorch_eager"]["value"], 0.5)
        self.assertEqual(targets["resnet18_bf16_images_per_s_over_pytorch"],
                         {"value": 1.2, "target": ">= 1.1", "met": True})
        self.assertEqual(targets["resnet18_bf16_peak_memory_over_pytorch"]["value"], 0.9)
        self.assertEqual(targets["resnet18_bf16_speedup_over_own_fp32"],
                         {"value": 2.5, "target": ">= 2.0", "met": True})
        self.assertEqual(targets["resnet18_fp16_speedup_over_own_fp32"]["met"], False)


class TrainerTest(unittest.TestCase):
    def test_time_to_target_sums_the_epochs_up_to_the_first_that_reached_it(self):
        epochs = [{"epoch": 1, "test_accuracy": 0.85, "seconds": 1.5},
                  {"epoch": 2, "test_accuracy": 0.891, "seconds": 1.0},
                  {"epoch": 3, "test_accuracy": 0.88, "seconds": 1.0}]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as metrics:
            metrics.write("".join(json.dumps(epoch) + "\n" for epoch in epochs))
        try:
            summary = {"model": "lenet", "epochs": 3, "test_accuracy": 0.88, "cuda_graph": True}
            figures = log_parsers.parse("trainer", "epoch lines\n" + json.dumps(summary) + "\n",
                                        {"metrics": metrics.name, "target": 0.89})["figures"]
        finally:
            os.remove(metrics.name)
        self.assertEqual(figures["seconds_to_target"], 2.5)
        self.assertEqual(figures["epoch_test_accuracy"], [0.85, 0.891, 0.88])
        self.assertTrue(figures["cuda_graph"])
        self.assertIsNone(log_parsers.time_to_target(epochs, 0.95))

    def test_pytorch_twin_last_line(self):
        text = 'epoch 1/6 ...\n{"framework": "pytorch", "seconds_to_target": 3.5}\n'
        self.assertEqual(log_parsers.parse("pytorch_trainer", text, {})["figures"],
                         {"framework": "pytorch", "seconds_to_target": 3.5})


REPOSITORY = os.path.join(HERE, "..", "..")

# train_gpt's end (tools/trainers/train_gpt.cpp: the Trainer's epoch lines, the sample, then
# print_summary's nlohmann::ordered_json dump, compact, in this order).
TRAIN_GPT_LOG = """\
[2026-11-27 15:18:22.864] [info] train_gpt: GPT of 820352 parameters (4 layers, 4 heads, 128 \
wide, block 128) on /w/shakespeare (4551478 training, 505720 validation tokens), 2000 steps
epoch 7/8  train_loss 1.7801  test_loss 1.7512  test_accuracy 0.4702  812345 tok/s  1.1 s
epoch 8/8  train_loss 1.7403  test_loss 1.7186  test_accuracy 0.4791  815000 tok/s  1.0 s
---- sample ----

ROMEO: {not JSON} what light
----
{"model":"gpt","params":820352,"steps":2000,"val_loss":1.7186,"val_accuracy":0.4791,\
"train_loss":1.7403,"tokens_per_sec":812000.5,"wall_seconds":11.25,"device":"cuda:0",\
"precision":"fp32","cuda_graph":true,"world_size":1}
"""

# The twin's end (tools/pytorch/train_gpt_pytorch.py: its step lines, the sample, json.dumps).
TWIN_LOG = """\
step 2000/2000: loss 1.7350 (mean of the last 50), lr 0.0001, 402,000 tokens/s
step 2000: val loss 1.7245
sample (temperature 0.8, top-k 40):
KING: so
""" + json.dumps({
    "framework": "pytorch", "model": "gpt", "steps": 2000, "val_loss": 1.7245,
    "val_losses": [[250, 2.4], [2000, 1.7245]], "train_loss": 1.735, "tokens_per_sec": 406000.0,
    "train_s": 20.2, "wall_s": 24.5, "params": 836736, "batch_size": 32, "block_size": 128,
    "lr": 0.001, "seed": 0, "device": "cuda", "precision": "fp32", "compile": False,
    "threads": 16, "torch_version": "2.9.0"}) + "\n"


class GptTest(unittest.TestCase):
    minidl_step = "train_gpt shakespeare (CUDA)"
    twin_step = "train_gpt_pytorch.py shakespeare (CUDA)"

    def test_the_field_names_read_are_the_programs_own(self):
        # A renamed field would leave the parser with nulls after a GPU run: it shows here first.
        with open(os.path.join(REPOSITORY, "tools", "trainers", "train_gpt.cpp"),
                  encoding="utf-8") as source:
            train_gpt = source.read()
        for name in ("model", "val_loss", "tokens_per_sec", "wall_seconds", "steps"):
            self.assertIn(f'summary["{name}"]', train_gpt)
        with open(os.path.join(REPOSITORY, "train", "trainer.cpp"), encoding="utf-8") as source:
            self.assertIn('"epoch %lld/%lld%s  train_loss %.4f  test_loss %.4f  ', source.read())
        with open(os.path.join(REPOSITORY, "tools", "pytorch", "train_gpt_pytorch.py"),
                  encoding="utf-8") as source:
            twin = source.read()
        for name in ("model", "val_loss", "val_losses", "tokens_per_sec", "train_s", "wall_s"):
            self.assertIn(f'"{name}": ', twin)
        self.assertIn('print(f"step {done}: val loss {val_losses[-1][1]:.4f}"', twin)

    def test_reads_train_gpts_summary(self):
        figures = log_parsers.parse("gpt_summary", TRAIN_GPT_LOG, {})["figures"]
        self.assertEqual(figures["val_loss"], 1.7186)
        self.assertEqual(figures["tokens_per_sec"], 812000.5)
        self.assertEqual(figures["wall_seconds"], 11.25)
        self.assertIsNone(figures["train_seconds"])
        self.assertEqual(figures["framework"], "minidl")
        self.assertTrue(figures["complete"])
        self.assertTrue(figures["cuda_graph"])
        self.assertEqual(figures["steps"], 2000)

    def test_reads_the_twins_summary_under_the_same_names(self):
        figures = log_parsers.parse("gpt_summary", TWIN_LOG, {})["figures"]
        self.assertEqual(figures["framework"], "pytorch")
        self.assertEqual(figures["val_loss"], 1.7245)
        self.assertEqual(figures["wall_seconds"], 24.5)
        self.assertEqual(figures["train_seconds"], 20.2)
        self.assertEqual(figures["tokens_per_sec"], 406000.0)
        self.assertEqual(figures["val_losses"], [[250, 2.4], [2000, 1.7245]])

    def test_a_log_cut_short_keeps_the_last_evaluation_and_says_it_is_incomplete(self):
        cut = TRAIN_GPT_LOG[:TRAIN_GPT_LOG.index('"tokens_per_sec"')]  # the summary line cut
        self.assertEqual(log_parsers.parse("gpt_summary", cut, {})["figures"],
                         {"complete": False, "last_val_loss": 1.7186})
        twin_cut = TWIN_LOG[:TWIN_LOG.index("sample")]
        self.assertEqual(log_parsers.parse("gpt_summary", twin_cut, {})["figures"],
                         {"complete": False, "last_val_loss": 1.7245})
        self.assertEqual(log_parsers.parse("gpt_summary", "", {})["figures"], {"complete": False})

    def test_targets_put_the_pair_side_by_side(self):
        def record(name, log, seconds=30.0):
            return {"name": name, "status": "passed", "wall_seconds": seconds,
                    **log_parsers.parse("gpt_summary", log, {})}

        targets = stages.accuracy_targets([record(self.minidl_step, TRAIN_GPT_LOG, 12.0),
                                           record(self.twin_step, TWIN_LOG, 30.0)])
        targets = targets["gpt_shakespeare"]
        self.assertEqual(targets["val_loss_minus_pytorch"], -0.0059)
        self.assertEqual(targets["process_seconds_over_pytorch"], 0.4)
        self.assertEqual(targets["pytorch"]["process_seconds"], 30.0)
        self.assertEqual(targets["val_loss_gap_nats"],
                         {"value": 0.0059, "target": "<= 0.02", "met": True})
        self.assertEqual(targets["wall_seconds_over_pytorch"], 0.459)
        self.assertEqual(targets["tokens_per_sec_over_pytorch"], 2.0)
        self.assertEqual(targets["minidl"]["val_loss"], 1.7186)
        self.assertEqual(targets["pytorch"]["train_seconds"], 20.2)
        worse = TRAIN_GPT_LOG.replace('"val_loss":1.7186', '"val_loss":1.7516')
        targets = stages.accuracy_targets([record(self.minidl_step, worse),
                                           record(self.twin_step, TWIN_LOG)])["gpt_shakespeare"]
        self.assertEqual(targets["val_loss_gap_nats"],
                         {"value": 0.0271, "target": "<= 0.02", "met": False})
        # The twin timed out: no verdict, not a pass.
        targets = stages.accuracy_targets([record(self.minidl_step, TRAIN_GPT_LOG),
                                           record(self.twin_step, TWIN_LOG[:40])])
        gpt = targets["gpt_shakespeare"]
        self.assertEqual(gpt["val_loss_gap_nats"], {"value": None, "target": "<= 0.02",
                                                    "met": None})
        self.assertIsNone(gpt["wall_seconds_over_pytorch"])
        timed_out = dict(record(self.twin_step, TWIN_LOG[:40], 120.0), status="timed_out")
        gpt = stages.accuracy_targets([record(self.minidl_step, TRAIN_GPT_LOG),
                                       timed_out])["gpt_shakespeare"]
        self.assertIsNone(gpt["pytorch"]["process_seconds"])
        self.assertIsNone(gpt["process_seconds_over_pytorch"])
        self.assertIsNone(stages.accuracy_targets([])["gpt_shakespeare"]["val_loss_minus_pytorch"])

    def test_the_gpt_steps_come_last_with_one_recipe_and_gpt_selects_them(self):
        with mock.patch.dict(os.environ, {"MINIDL_GPU_WORK_DIR": "/w", "MINIDL_GPU_KIT_DIR": "/k",
                                          "MINIDL_GPU_BUILD_DIR": "/b"}):
            steps = stages.accuracy_steps(stages.Context(rehearse=True))
        data, minidl, twin = steps[-3:]
        self.assertEqual([data.name, minidl.name, twin.name],
                         ["gpt data: Shakespeare token files from the kit's archive",
                          self.minidl_step, self.twin_step])
        self.assertIn("/k/data/shakespeare", data.command)
        self.assertEqual(data.command[data.command.index("--out") + 1], "/w/shakespeare")
        self.assertIn("train_gpt", steps[1].command)  # the build step's targets
        self.assertIn("prepare_text_tokens", steps[1].command)

        def options(command):
            return {command[index]: command[index + 1] for index in range(len(command) - 1)
                    if command[index].startswith("--") and not command[index + 1].startswith("--")}

        ours, theirs = options(minidl.command), options(twin.command)
        for option in ("--max-steps", "--batch-size", "--lr", "--eval-interval", "--precision",
                       "--device", "--data-dir"):
            self.assertEqual(ours[option], theirs[option], option)
        self.assertEqual(ours["--eval-batches"], theirs["--eval-iters"])
        self.assertEqual((ours["--device"], ours["--precision"]), ("cuda", "fp32"))
        self.assertEqual(options(minidl.rehearsal_command)["--device"], "cpu")
        self.assertEqual(options(minidl.rehearsal_command)["--max-steps"], "20")
        selected = stages.select_steps(steps, "gpt")
        self.assertEqual([step.name for step in selected if step.skip_reason is None],
                         ["configure", "build", data.name, self.minidl_step, self.twin_step])


if __name__ == "__main__":
    unittest.main(verbosity=1)
