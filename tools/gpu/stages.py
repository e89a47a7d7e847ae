#!/usr/bin/env python3
"""The steps of the GPU kit's two stages, run by tools/gpu/run.sh once it has set up the
environment (the kit unpacked, LD_LIBRARY_PATH, MINIDL_DATA, the GPU's architecture):

    python3 tools/gpu/stages.py test|bench|accuracy OUTDIR [--rehearse]

test      configure and build for the GPU found; ctest -L gpu, unit, e2e, mpi (on the kit's
          Open MPI); DDP on CUDA tensors with 2 ranks sharing the GPU over MPI, and the Trainer
          over NCCL at world size 1, each against one process; compute-sanitizer memcheck over
          the CUDA test programs, racecheck over the ops with shared-memory kernels
bench     tools/bench/bench_compare.py --device cuda against PyTorch eager and torch.compile
          (reduce-overhead, max-autotune): LeNet fp32 (the step replayed from a CUDA graph, and
          eager), ResNet-18 batch 512 bf16/fp16 channels-last and fp32 with TF32 off and on,
          with each side's peak memory over the whole run (bf16 also with cuDNN's batch norm and
          with both sides timing cuDNN's convolution algorithms); the kernel/gap profile (--profile)
accuracy  time to accuracy of train_lenet (0.89) and train_cifar10 --dataset fashion-mnist
          --model resnet18 (0.94) next to the PyTorch twins; then train_gpt's recipe on
          Shakespeare (token files made from the kit's archive) next to its twin: the final
          validation loss (issue 28: within 0.02 nats of the twin's), wall time and tokens/s

Each stage ends within STAGE_SECONDS (MINIDL_GPU_STAGE_SECONDS sets fewer, to fit two stages
in one call): steps run in the order below, each under its own budget, and a step is cut to
what is left of the stage. Budgets are caps: measured times on an H100 (16 cores) are far
below them.

Environment (run.sh sets the first ones):
    MINIDL_GPU_BUILD_DIR            the CUDA build (default build-gpu in the repository)
    MINIDL_GPU_RESNET18_EPOCHS      epochs of both ResNet-18 time-to-accuracy runs (default 15)
    MINIDL_GPU_RESNET18_PRECISION   their precision (default bf16)
    MINIDL_GPU_CUDA_GRAPH           --cuda-graph of train_cifar10 (default on, its default)
    MINIDL_GPU_STAGE_SECONDS        the stage's length, at most STAGE_SECONDS
    MINIDL_GPU_STEPS                a regular expression: only the steps whose names it finds
                                    run (configure and build always do); the others are
                                    recorded as skipped. For a short lease: the new paths first
                                    (accuracy: `gpt` runs the GPT's three steps alone)
"""
import argparse
import datetime
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
from step_runner import Step, StageRunner  # noqa: E402

STAGE_SECONDS = 540  # 9 minutes
STAGES = ("test", "bench", "accuracy")
SUMMARY_SECONDS = 20  # kept back for the versions' tail, the summary and the log archive

# compute-sanitizer memcheck runs every CUDA test program (tests/<folder>/*_cuda_test.cpp make
# minidl_<folder>_cuda_tests), these first, each with its budget (seconds; others get the default).
MEMCHECK_FIRST = {"ops": 120, "optim": 60, "train": 90, "core": 60}
MEMCHECK_DEFAULT_SECONDS = 45
MEMCHECK_LEFT_OUT = {"tools": "its CUDA tests check the CUPTI recorder, not minidl's kernels"}
# racecheck, per CUDA test folder: the tests whose kernels share memory within a block (ops:
# reductions, softmax and the losses, batch norm, layer norm, pooling, attention, sorting; nn:
# clip_grad_norm_'s multi-tensor reduction).
RACECHECK_FILTERS = {
    "ops": ("ReduceCuda.*:SoftmaxCuda.*:CrossEntropyCuda.*:NllLossCuda.*:MseLossCuda.*:"
            "BatchNormCuda.*:LayerNormCuda.*:GroupNormCuda.*:PoolCuda.*:"
            "Cases/AttentionCudaParity.MatchesTheCpu/Plain:"
            "Cases/AttentionCudaParity.MatchesTheCpu/OddHeadDims:AttentionCuda.BroadcastMask*:"
            "Cases/AttentionTensorCores.MatchesTheCpu/RaggedTiles:"
            # the shared-memory bitonic sort (ops/cuda/sort.cu); the vocabulary-sized rows
            # take the global-memory path and would only slow the tool down
            "SortCuda.MatchesTheCpu*:SortCuda.RowsAtTheSharedMemoryLimitAndBeyond"),
    "nn": "*ClipGrad*",
}


class Context:
    """Where things are, from run.sh's environment."""

    def __init__(self, rehearse):
        environ = os.environ
        self.rehearse = rehearse
        self.repository = environ.get("MINIDL_GPU_REPOSITORY") or os.getcwd()
        self.kit = environ.get("MINIDL_GPU_KIT_DIR", os.path.join(self.repository, ".gpu-kit"))
        self.work = environ.get("MINIDL_GPU_WORK_DIR", "/tmp/minidl-gpu")
        self.prefix = environ.get("MINIDL_GPU_PREFIX", os.path.join(self.work, "deps/root/usr"))
        self.nvidia = environ.get("MINIDL_GPU_NVIDIA") or ""
        self.libs = environ.get("MINIDL_GPU_LIBS", os.path.join(self.work, "libs"))
        self.arch = environ.get("MINIDL_GPU_ARCH") or ""
        self.build = os.path.abspath(environ.get("MINIDL_GPU_BUILD_DIR")
                                     or os.path.join(self.repository, "build-gpu"))
        self.jobs = os.cpu_count() or 1
        self.python = sys.executable
        self.data = environ.get("MINIDL_DATA", os.path.join(self.kit, "data"))
        # The kit's Open MPI, unpacked and relocated by run.sh (tools/gpu/kit_mpi_env.sh); empty
        # when the kit holds none.
        self.kit_mpi_root = environ.get("MINIDL_GPU_KIT_MPI_ROOT") or ""
        # The kit's cuDNN frontend headers (run.sh); empty when the kit holds none.
        self.cudnn_frontend = environ.get("MINIDL_CUDNN_FRONTEND_DIR") or ""

    @property
    def has_gpu(self):
        return bool(self.arch) and not self.rehearse

    def tool(self, name):
        return os.path.join(self.build, "tools", name)

    def configure_command(self):
        # gpu.sh's line of the first GPU run: the kit's packages through CMAKE_PREFIX_PATH, and
        # cuDNN and NCCL from PyTorch's wheels (their headers through the compiler flags).
        nvidia = self.nvidia or "/NVIDIA_PYTHON_PACKAGES"  # a rehearsal has none
        multiarch = f"{self.prefix}/lib/x86_64-linux-gnu"
        include = f"-I{nvidia}/cudnn/include -I{nvidia}/nccl/include"
        return ["cmake", "-S", self.repository, "-B", self.build, "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", "-DMINIDL_CUDA=ON",
                f"-DCMAKE_CUDA_ARCHITECTURES={self.arch or '90'}",
                f"-DCMAKE_PREFIX_PATH={self.prefix}",
                f"-DMINIDL_CBLAS_INCLUDE={self.prefix}/include/x86_64-linux-gnu/openblas-pthread",
                f"-DMINIDL_OPENBLAS={multiarch}/openblas-pthread/libopenblas.so",
                f"-DMINIDL_CUDNN={self.libs}/libcudnn.so", f"-DMINIDL_NCCL={self.libs}/libnccl.so",
                f"-DMINIDL_NCCL_INCLUDE={nvidia}/nccl/include",
                f"-DCMAKE_CXX_FLAGS={include}", f"-DCMAKE_CUDA_FLAGS={include}",
                # The cuDNN attention, on the kit's frontend headers: AUTO, so that a toolkit
                # without NVRTC builds without it rather than failing the stage (its tests then
                # skip saying so, and its bench step fails naming the build).
                f"-DMINIDL_CUDNN_FRONTEND={'AUTO' if self.cudnn_frontend else 'OFF'}",
                *self.mpi_configure_options()]

    def mpi_configure_options(self):
        """FindMPI pointed at the kit's Open MPI: its mpicxx wrapper (which reports the kit's
        include and library paths under run.sh's OPAL_PREFIX) and mpiexec for the mpi tests."""
        if not self.kit_mpi_root:
            return []
        bin_dir = os.path.join(self.kit_mpi_root, "usr", "bin")
        return [f"-DMPI_CXX_COMPILER={bin_dir}/mpicxx", f"-DMPIEXEC_EXECUTABLE={bin_dir}/mpiexec"]

    def not_checkable(self):
        """Paths that only the GPU machine has."""
        return [self.nvidia or "/NVIDIA_PYTHON_PACKAGES", self.libs]


def build_steps(context, targets=()):
    """Configure (unless an earlier stage did) and build: everything, or `targets`."""
    configured = os.path.isfile(os.path.join(context.build, "CMakeCache.txt"))
    reuse = f"reusing {context.build}, configured earlier" if configured and context.has_gpu \
        else None
    build = ["cmake", "--build", context.build, "-j", str(context.jobs)]
    if targets:
        build += ["--target", *targets]
    return [Step("configure", context.configure_command(), 90, needs_gpu=True, skip_reason=reuse),
            Step("build", build, 270, needs_gpu=True)]


def ctest(context, label, per_test_timeout, jobs=None, exclude=None):
    command = ["ctest", "--test-dir", context.build, "-L", label, "--output-on-failure",
               "--no-tests=error", "--timeout", str(per_test_timeout),
               "-j", str(jobs or context.jobs)]
    return command + (["-E", exclude] if exclude else [])


def cuda_test_folders(repository):
    """The folders of tests/ with CUDA tests: MEMCHECK_FIRST's first, then by name."""
    tests = os.path.join(repository, "tests")
    folders = [folder for folder in os.listdir(tests)
               if os.path.isdir(os.path.join(tests, folder))
               and any(name.endswith("_cuda_test.cpp")
                       for name in os.listdir(os.path.join(tests, folder)))]
    first = list(MEMCHECK_FIRST)
    return sorted(folders, key=lambda folder: (first.index(folder) if folder in first
                                               else len(first), folder))


def test_steps(context):
    expect_gpu = {"MINIDL_EXPECT_GPU": "1"}  # a CUDA test that would skip for want of a GPU fails
    mpirun = shutil.which("mpirun")
    unit = ctest(context, "unit", 120)
    e2e = ctest(context, "e2e", 300, exclude=r"^e2e\.install_subdirectory$")
    mpi = ctest(context, "mpi", 120)
    no_mpirun = None if mpirun else "no mpirun here (the kit holds no Open MPI: run pack.sh again)"
    steps = build_steps(context) + [
        Step("ctest -L gpu", ctest(context, "gpu", 120, jobs=min(8, context.jobs)), 150,
             parser="ctest", needs_gpu=True, env=expect_gpu),
        # Rehearsals run every 40th test, a few e2e tests, one mpi case.
        Step("ctest -L unit", unit, 120, parser="ctest", rehearsal_command=unit + ["-I", "1,,40"]),
        # e2e.install_subdirectory compiles the library again (no ccache there); CI runs it.
        Step("ctest -L e2e", e2e, 150, parser="ctest", env=expect_gpu, rehearsal_command=e2e + [
            "-R", r"^e2e\.(architecture_paths|fit_line|readme_snippet_markers)$"]),
        # A rehearsal runs the build's own mpiexec (CI's build found the system's), so its one
        # case proves the label's wiring; the two steps below prove the kit's Open MPI.
        Step("ctest -L mpi", mpi, 90, parser="ctest", skip_reason=no_mpirun,
             rehearsal_command=mpi + ["-R", r"^mpi\.fault_exit0_np2$"]),
        *multi_rank_steps(context),
    ]
    for folder in cuda_test_folders(context.repository):
        program = os.path.join(context.build, "tests", f"minidl_{folder}_cuda_tests")
        if folder in MEMCHECK_LEFT_OUT:
            steps.append(Step(f"memcheck {folder}", [], 0,
                              skip_reason="left out: " + MEMCHECK_LEFT_OUT[folder]))
            continue
        # --report-api-errors no: a failing CUDA call is minidl's own check's to report (it
        # throws, and the test fails); memcheck counted as errors the calls meant to fail (the
        # out-of-memory test's cudaMalloc, NCCL probing kernels it lacks for this GPU).
        steps.append(Step(f"memcheck {folder}", [
            "compute-sanitizer", "--tool", "memcheck", "--report-api-errors", "no",
            "--error-exitcode", "99", program],
            MEMCHECK_FIRST.get(folder, MEMCHECK_DEFAULT_SECONDS), parser="gtest",
            needs_gpu=True, env=expect_gpu))
        if folder in RACECHECK_FILTERS:
            steps.append(Step(f"racecheck {folder}", [
                "compute-sanitizer", "--tool", "racecheck", "--error-exitcode", "99", program,
                f"--gtest_filter={RACECHECK_FILTERS[folder]}"], 90, parser="gtest",
                needs_gpu=True, env=expect_gpu))
    return steps


# mpirun's environment in the multi-rank steps, as the mpi label's tests set it
# (tests/distributed/mpi/mpi_tests.cmake): as root, shared memory and TCP only.
MPI_STEP_ENVIRONMENT = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "MINIDL_COLLECTIVE_TIMEOUT_S": "60"}


def multi_rank_steps(context):
    """What one GPU runs of multi-rank CUDA training, each compared with one process:
    DDP on CUDA tensors over MPI with 2 ranks sharing the GPU (NCCL refuses two ranks on one
    GPU; MpiDataParallelCuda in tests/distributed/mpi/ddp_mpi.cpp), and the Trainer with its
    gradients averaged over NCCL at world size 1 (tests/train/trainer_nccl_cuda_test.cpp).
    The first runs under tools/gpu/with_kit_mpi_only.sh: mpirun and libmpi must be the kit's, and
    the machine's own Open MPI, if any, is masked. A rehearsal runs its CPU form the same way
    (the CPU DDP test beside it; the CUDA test skips), so every CI run proves the relocation."""
    expect_gpu = ["env", "MINIDL_EXPECT_GPU=1"]  # not in Step.env: the CPU forms run without it
    no_kit_mpi = None if context.kit_mpi_root else (
        "the kit holds no Open MPI (packed before it was added: run tools/gpu/pack.sh again)")
    kit_only = [os.path.join(context.repository, "tools", "gpu", "with_kit_mpi_only.sh")]
    mpirun = ["mpirun", "--oversubscribe", "-np", "2"]
    mpi_tests = os.path.join(context.build, "tests", "minidl_distributed_mpi_tests")
    train_tests = os.path.join(context.build, "tests", "minidl_train_cuda_tests")
    ddp_cuda = "--gtest_filter=MpiDataParallelCuda.*"
    # mpirun gives the ranks a terminal, and GoogleTest would colour the lines the parser reads.
    no_color = "--gtest_color=no"
    ddp_both = ("--gtest_filter=MpiDataParallel.LeNetOnRanksMatchesOneProcessOnTheWholeBatch:"
                "MpiDataParallelCuda.*")
    nccl = "--gtest_filter=TrainerOnNccl.*"
    return [
        Step("mpi: DDP on CUDA tensors, 2 ranks sharing the GPU, vs one process",
             [*expect_gpu, *kit_only, *mpirun, mpi_tests, ddp_cuda, no_color], 90,
             parser="mpi_gtest", needs_gpu=True, env=MPI_STEP_ENVIRONMENT, skip_reason=no_kit_mpi,
             rehearsal_command=[*kit_only, *mpirun, mpi_tests, ddp_both, no_color]),
        Step("trainer on NCCL at world size 1 vs one process",
             [*expect_gpu, train_tests, nccl], 60, parser="gtest", needs_gpu=True,
             rehearsal_command=[train_tests, nccl]),
    ]


def bench_steps(context):
    bench = context.tool("bench")
    compare = [context.python, "tools/bench/bench_compare.py", "--bench", bench, "--device", "cuda"]
    resnet18 = ["--model", "resnet18", "--batch-size", "512"]
    # torch.compile's modes beside eager: reduce-overhead is CUDA graphs (our captured step's
    # trick), max-autotune Triton fusion and autotuned GEMMs, whose compilation is the longest,
    # so it runs in a step of its own: one that runs out of time loses no other row. ResNet-18
    # bf16 compiled in 110 s on an H200 (2026-11-26); LeNet's did not end within 150 s there,
    # and its target is reduce-overhead's, so it is left out.
    quick_modes = ["--pytorch-mode", "eager,reduce-overhead"]
    lenet = compare + ["--model", "lenet", "--precision", "fp32"]
    return build_steps(context, ["bench"]) + [
        Step("lenet fp32: minidl (CUDA graph) vs PyTorch", lenet + quick_modes, 120,
             parser="bench_compare", needs_gpu=True),
        Step("lenet fp32: minidl eager (--cuda-graph off)", [
            bench, "--device", "cuda", "--model", "lenet", "--precision", "fp32",
            "--cuda-graph", "off"], 45, parser="bench_json", needs_gpu=True,
            rehearsal_command=[bench, "--device", "cpu", "--model", "lenet", "--batch-size", "32",
                               "--warmup", "1", "--steps", "2"]),
        Step("resnet18 b512 bf16 channels-last vs PyTorch", compare + resnet18 + [
            "--precision", "bf16", "--channels-last", *quick_modes], 150,
             parser="bench_compare", needs_gpu=True),
        Step("resnet18 b512 fp16 channels-last vs PyTorch", compare + resnet18 + [
            "--precision", "fp16", "--channels-last", *quick_modes], 150,
             parser="bench_compare", needs_gpu=True),
        # The same two with cuDNN's batch norm (ops/cuda/batch_norm_cudnn.h, its fused BN+ReLU and
        # BN+add+ReLU where it takes them) instead of minidl's kernels: issue 29's item 4.
        Step("resnet18 b512 bf16 channels-last, cuDNN batch norm, vs PyTorch", compare + resnet18 + [
            "--precision", "bf16", "--channels-last", "--pytorch-mode", "eager"], 120,
             parser="bench_compare", needs_gpu=True, env={"MINIDL_CUDA_BATCH_NORM": "cudnn"}),
        Step("resnet18 b512 fp16 channels-last, cuDNN batch norm, vs PyTorch", compare + resnet18 + [
            "--precision", "fp16", "--channels-last", "--pytorch-mode", "eager"], 120,
             parser="bench_compare", needs_gpu=True, env={"MINIDL_CUDA_BATCH_NORM": "cudnn"}),
        # Both sides timing cuDNN's convolution algorithms in the warm-up (set_cudnn_benchmark,
        # torch.backends.cudnn.benchmark) instead of taking its heuristics.
        Step("resnet18 b512 bf16 channels-last, cuDNN benchmark, vs PyTorch", compare + resnet18 + [
            "--precision", "bf16", "--channels-last", "--cudnn-benchmark", "on",
            "--pytorch-mode", "eager"], 120, parser="bench_compare", needs_gpu=True),
        Step("profile resnet18 b512 bf16 channels-last vs PyTorch", compare + resnet18 + [
            "--precision", "bf16", "--channels-last", "--steps", "5", "--profile",
            "--pytorch-mode", "eager"], 120, parser="bench_compare", needs_gpu=True),
        Step("resnet18 b512 fp32 vs PyTorch", compare + resnet18 + ["--precision", "fp32"], 120,
             parser="bench_compare", needs_gpu=True),
        Step("resnet18 b512 fp32 TF32 vs PyTorch", compare + resnet18 + [
            "--precision", "fp32", "--tf32", "on"], 120, parser="bench_compare", needs_gpu=True),
        Step("resnet18 b512 bf16 channels-last vs PyTorch max-autotune", compare + resnet18 + [
            "--precision", "bf16", "--channels-last", "--pytorch-mode", "max-autotune"], 300,
             parser="bench_compare", needs_gpu=True),
        Step("profile lenet,resnet18 fp32 vs PyTorch", compare + [
            "--model", "lenet,resnet18", "--precision", "fp32", "--steps", "10", "--profile"],
            120, parser="bench_compare", needs_gpu=True),
        # GPT-2 small (--gpt-shape auto on CUDA), batch 8 of 1024 tokens: nanoGPT's recipe is
        # bf16 autocast under torch.compile's default mode.
        Step("gpt2-small bf16 vs PyTorch", compare + [
            "--model", "gpt", "--precision", "bf16", "--pytorch-mode", "eager,default"], 180,
             parser="bench_compare", needs_gpu=True),
        # The step above runs the fastest attention that fits (cuDNN's); the same with the
        # tensor-core attention named (ops/cuda/attention_tensor_cores.cu).
        Step("gpt2-small bf16 tensor-core attention vs PyTorch", compare + [
            "--model", "gpt", "--precision", "bf16", "--pytorch-mode", "eager"], 180,
             parser="bench_compare", needs_gpu=True,
             env={"MINIDL_CUDA_ATTENTION": "tensor-cores"}),
        # And with cuDNN's fused attention named (ops/cuda/attention_cudnn.cpp): it fails where
        # cuDNN is missing from the build, where the step above would quietly use another.
        Step("gpt2-small bf16 cuDNN attention vs PyTorch", compare + [
            "--model", "gpt", "--precision", "bf16", "--pytorch-mode", "eager"], 180,
             parser="bench_compare", needs_gpu=True, env={"MINIDL_CUDA_ATTENTION": "cudnn"}),
        Step("gpt2-small fp32 TF32 vs PyTorch", compare + [
            "--model", "gpt", "--precision", "fp32", "--tf32", "on"], 90,
             parser="bench_compare", needs_gpu=True),
        Step("profile gpt2-small bf16 vs PyTorch", compare + [
            "--model", "gpt", "--precision", "bf16", "--steps", "5", "--profile",
            "--pytorch-mode", "eager"], 90, parser="bench_compare", needs_gpu=True),
    ]


def select_steps(steps, pattern):
    """The steps MINIDL_GPU_STEPS names run (and configure and build); the others are skipped,
    each with the reason in the summary."""
    if not pattern:
        return steps
    for step in steps:
        if step.name not in ("configure", "build") and not re.search(pattern, step.name) \
                and step.skip_reason is None:
            step.skip_reason = f"not selected (MINIDL_GPU_STEPS={pattern})"
    return steps


# train_gpt's default recipe (tools/trainers/train_gpt.cpp), spelled out for both programs so
# that the pair runs the same one: 2000 AdamW steps of batch 32 x 128 bytes, peak lr 1e-3, the
# validation loss of 20 batches every 250 steps, float32 (TF32 off, both programs' default).
GPT_RECIPE = ["--max-steps", "2000", "--batch-size", "32", "--lr", "1e-3",
              "--eval-interval", "250", "--precision", "fp32"]
GPT_EVAL_BATCHES = "20"  # train_gpt's --eval-batches, the twin's --eval-iters
# Their CPU forms for a rehearsal: 20 steps, two evaluations of 2 batches.
GPT_SMALL = ["--max-steps", "20", "--batch-size", "32", "--lr", "1e-3", "--eval-interval", "10",
             "--precision", "fp32"]
GPT_SMALL_EVAL_BATCHES = "2"
GPT_LOSS_TOLERANCE = 0.02  # nats: issue 28's learning target against the twin


def gpt_steps(context):
    """train_gpt on Shakespeare next to tools/pytorch/train_gpt_pytorch.py, on token files that
    tools/fetch_shakespeare.sh makes here from the kit's archive (the GPU machine has no
    network), in a scratch folder of the work folder."""
    tokens = os.path.join(context.work, "shakespeare")
    data = ["--data-dir", tokens]
    train_gpt = context.tool("train_gpt")
    twin = [context.python, "tools/pytorch/train_gpt_pytorch.py"]
    quiet = ["--checkpoint-dir", "", "--no-progress"]
    # The twin's CPU form needs PyTorch where the rehearsal runs (CI's Python has none: there
    # its command line is checked with stand-ins, and its parser by log_parsers_test.py).
    twin_small = [*twin, "--device", "cpu", *data, *GPT_SMALL, "--eval-iters",
                  GPT_SMALL_EVAL_BATCHES, "--threads", "2"] \
        if importlib.util.find_spec("torch") else None
    return [
        Step("gpt data: Shakespeare token files from the kit's archive", [
            os.path.join(context.repository, "tools", "fetch_shakespeare.sh"),
            "--archive-from", os.path.join(context.kit, "data", "shakespeare"),
            "--prepare-program", context.tool("prepare_text_tokens"), "--out", tokens], 60),
        Step("train_gpt shakespeare (CUDA)", [
            train_gpt, "--device", "cuda", *data, *GPT_RECIPE, "--eval-batches", GPT_EVAL_BATCHES,
            *quiet], 120, parser="gpt_summary", needs_gpu=True,
            rehearsal_command=[train_gpt, "--device", "cpu", *data, *GPT_SMALL,
                               "--eval-batches", GPT_SMALL_EVAL_BATCHES, "--warmup-steps", "5",
                               "--sample-tokens", "0", *quiet]),
        Step("train_gpt_pytorch.py shakespeare (CUDA)", [
            *twin, "--device", "cuda", *data, *GPT_RECIPE, "--eval-iters", GPT_EVAL_BATCHES], 120,
            parser="gpt_summary", needs_gpu=True, rehearsal_command=twin_small),
    ]


def accuracy_steps(context):
    epochs = os.environ.get("MINIDL_GPU_RESNET18_EPOCHS", "15")
    precision = os.environ.get("MINIDL_GPU_RESNET18_PRECISION", "bf16")
    cuda_graph = os.environ.get("MINIDL_GPU_CUDA_GRAPH", "on")
    metrics = {name: os.path.join(context.work, f"metrics-{name}.jsonl")
               for name in ("lenet-graph", "lenet-eager", "resnet18")}
    quiet = ["--checkpoint-dir", "", "--no-progress"]
    # The trainers' CPU forms for a rehearsal: a slice of an epoch, through the same parser.
    small_lenet = ["--device", "cpu", "--epochs", "1", "--limit-train", "2048",
                   "--limit-test", "512"]
    small_resnet18 = ["--device", "cpu", "--epochs", "1", "--limit-train", "64",
                      "--limit-test", "32", "--batch-size", "32"]
    lenet = context.tool("train_lenet")
    cifar = context.tool("train_cifar10")
    cifar_recipe = ["--dataset", "fashion-mnist", "--model", "resnet18"]

    def trainer_step(name, program, recipe, gpu_options, target, budget, metrics_file, small):
        """A trainer's time to `target`; its CPU form (small) leaves the GPU options out."""
        outputs = [*quiet, "--metrics", metrics_file]
        return Step(name, [program, "--device", "cuda", *recipe, *gpu_options, *outputs], budget,
                    parser="trainer", parser_options={"metrics": metrics_file, "target": target},
                    needs_gpu=True, fresh_files=[metrics_file],
                    rehearsal_command=[program, *small, *recipe, *outputs])

    return build_steps(context, ["train_lenet", "train_cifar10", "train_gpt",
                                 "prepare_text_tokens"]) + [
        trainer_step("time to 0.89: train_lenet (CUDA graph)", lenet, [], ["--cuda-graph", "on"],
                     0.89, 60, metrics["lenet-graph"], small_lenet),
        trainer_step("time to 0.89: train_lenet eager", lenet, [], ["--cuda-graph", "off"], 0.89,
                     60, metrics["lenet-eager"], small_lenet),
        Step("time to 0.89: train_lenet_pytorch.py", [
            context.python, "tools/pytorch/train_lenet_pytorch.py", "--device", "cuda",
            "--data-dir", os.path.join(context.data, "fashion-mnist"), "--target", "0.89"], 90,
            parser="pytorch_trainer", needs_gpu=True),
        trainer_step("time to 0.94: train_cifar10 resnet18", cifar, cifar_recipe, [
            "--epochs", epochs, "--precision", precision, "--cuda-graph", cuda_graph], 0.94, 180,
            metrics["resnet18"], small_resnet18),
        Step("time to 0.94: train_cifar10_pytorch.py resnet18", [
            context.python, "tools/pytorch/train_cifar10_pytorch.py", *cifar_recipe,
            "--epochs", epochs, "--precision", precision, "--device", "cuda", "--target", "0.94"], 180,
            parser="pytorch_trainer", needs_gpu=True),
        # Last: the stage's 9 minutes may run out before them (MINIDL_GPU_STEPS=gpt runs only
        # these, with configure and build).
        *gpt_steps(context),
    ]


def _first_line(command, pattern=None, timeout=30):
    try:
        output = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"not available ({error.__class__.__name__})"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if pattern:
        lines = [line for line in lines if re.search(pattern, line)]
    return lines[0] if lines else None


def _header_version(path, names):
    try:
        with open(path, encoding="utf-8", errors="replace") as header:
            text = header.read()
    except OSError:
        return None
    parts = [re.search(rf"#define {name}\s+(\d+)", text) for name in names]
    return ".".join(part.group(1) for part in parts) if all(parts) else None


def versions(context):
    found = {
        "host": f"{platform.node()}, {context.jobs} CPUs, {platform.platform()}",
        "gpu": _first_line(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap,"
                            "memory.total", "--format=csv,noheader"])
        if not context.rehearse else "no GPU (rehearsal)",
        "architecture": f"sm_{context.arch}" if context.arch else None,
        "nvcc": _first_line(["nvcc", "--version"], "release"),
        "cudnn": _header_version(os.path.join(context.nvidia, "cudnn/include/cudnn_version.h"),
                                 ["CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"])
        if context.nvidia else None,
        "nccl": _header_version(os.path.join(context.nvidia, "nccl/include/nccl.h"),
                                ["NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"])
        if context.nvidia else None,
        "torch": _first_line([context.python, "-c", "import torch; print(torch.__version__, 'CUDA',"
                              " torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"],
                             r"^\d"),
        "python": platform.python_version(),
        "cmake": _first_line(["cmake", "--version"]),
        "ninja": _first_line(["ninja", "--version"]),
        "cxx": _first_line(["c++", "--version"]),
        "compute_sanitizer": _first_line(["compute-sanitizer", "--version"], "Version"),
        "mpirun": _first_line(["mpirun", "--version"]) if shutil.which("mpirun") else None,
        "git": _first_line(["git", "-C", context.repository, "rev-parse", "HEAD"],
                           r"^[0-9a-f]{40}$"),
    }
    try:
        with open(os.path.join(context.kit, "manifest.txt"), encoding="utf-8") as manifest:
            found["kit"] = [line.strip() for line in manifest
                            if line.strip() and not line.startswith("# ")]
    except OSError:
        found["kit"] = None
    return found


def setup_record(context, log_dir):
    """run.sh's part (kit, libraries, GPU) as the first step."""
    problems = os.environ.get("MINIDL_GPU_SETUP_PROBLEMS", "").strip()
    log = os.environ.get("MINIDL_GPU_SETUP_LOG")
    if log and os.path.exists(log):
        shutil.copy(log, os.path.join(log_dir, "00-setup.log"))
    return {"name": "setup", "command": "tools/gpu/run.sh: kit, libraries, GPU",
            "status": "failed" if problems else "passed", "exit_status": None,
            "reason": problems.replace("\n", "; ") or None,
            "wall_seconds": float(os.environ.get("MINIDL_GPU_SETUP_SECONDS", "0")),
            "budget_seconds": None, "log": "00-setup.log",
            "figures": {"environment": {name: os.environ.get(name) for name in (
                "LD_LIBRARY_PATH", "MINIDL_DATA", "PATH")}}}


def _figures(records, name):
    for record in records:
        if record["name"] == name:
            return record.get("figures") or {}
    return {}


def _ratio(numerator, denominator):
    if isinstance(numerator, (int, float)) and isinstance(denominator, (int, float)) \
            and denominator:
        return round(numerator / denominator, 3)
    return None


def _target(value, relation, bound):
    met = None if value is None else (value <= bound if relation == "<=" else value >= bound)
    return {"value": value, "target": f"{relation} {bound}", "met": met}


def bench_targets(records):
    """The issue's targets, from the bench steps' figures (bench_compare's rows are keyed
    "<model> <PyTorch mode>")."""
    def row(step, key):
        return (_figures(records, step).get("steps") or {}).get(key) or {}

    lenet_step = "lenet fp32: minidl (CUDA graph) vs PyTorch"
    lenet = row(lenet_step, "lenet eager")
    lenet_graphs = row(lenet_step, "lenet reduce-overhead")
    eager = next(iter(_figures(records, "lenet fp32: minidl eager (--cuda-graph off)").values()),
                 {})
    bf16_step = "resnet18 b512 bf16 channels-last vs PyTorch"
    bf16 = row(bf16_step, "resnet18 eager")
    bf16_autotuned = row(bf16_step + " max-autotune", "resnet18 max-autotune")
    fp16 = row("resnet18 b512 fp16 channels-last vs PyTorch", "resnet18 eager")
    fp32 = row("resnet18 b512 fp32 vs PyTorch", "resnet18 eager")
    fp32_tf32 = row("resnet18 b512 fp32 TF32 vs PyTorch", "resnet18 eager")
    ours, theirs = "minidl_ms_per_step", "pytorch_ms_per_step"

    def images_ratio(found):
        return _ratio(found.get("minidl_img_per_s"), found.get("pytorch_img_per_s"))

    def peak_ratio(found):
        return _ratio(found.get("minidl_peak_alloc_mb"), found.get("pytorch_peak_alloc_mb"))

    return {
        # bench_compare.py's own ratio: its ms columns have two decimals, few for LeNet.
        "lenet_fp32_graph_step_over_pytorch_eager": _target(
            lenet.get("ratio_ours_per_pytorch"), "<=", 0.25),
        "lenet_fp32_graph_step_over_pytorch_reduce_overhead": _target(
            lenet_graphs.get("ratio_ours_per_pytorch"), "<=", 1.0),
        "lenet_fp32_eager_step_over_pytorch_eager": {
            "value": _ratio(eager.get("step_ms_median"), lenet.get(theirs)), "target": None,
            "met": None},
        "resnet18_bf16_images_per_s_over_pytorch": _target(images_ratio(bf16), ">=", 1.1),
        "resnet18_fp16_images_per_s_over_pytorch": _target(images_ratio(fp16), ">=", 1.1),
        "resnet18_bf16_images_per_s_over_max_autotune": _target(
            images_ratio(bf16_autotuned), ">=", 1.0),
        "resnet18_bf16_peak_memory_over_max_autotune": _target(
            peak_ratio(bf16_autotuned), "<=", 1.0),
        "resnet18_bf16_peak_memory_over_pytorch": _target(peak_ratio(bf16), "<=", 1.0),
        "resnet18_fp32_step_over_pytorch": _target(fp32.get("ratio_ours_per_pytorch"), "<=", 1.0),
        "resnet18_fp32_tf32_step_over_pytorch": _target(
            fp32_tf32.get("ratio_ours_per_pytorch"), "<=", 1.0),
        "resnet18_bf16_speedup_over_own_fp32": _target(
            _ratio(fp32.get(ours), bf16.get(ours)), ">=", 2.0),
        "resnet18_fp16_speedup_over_own_fp32": _target(
            _ratio(fp32.get(ours), fp16.get(ours)), ">=", 2.0),
    }


def gpt_targets(records):
    """train_gpt's final validation loss within GPT_LOSS_TOLERANCE of its twin's (issue 28; each
    draws its own batches, so the gap is statistical), and its wall time and tokens/s next to
    the twin's."""
    steps = ("train_gpt shakespeare (CUDA)", "train_gpt_pytorch.py shakespeare (CUDA)")
    ours, theirs = (_figures(records, step) for step in steps)
    names = ("val_loss", "wall_seconds", "train_seconds", "tokens_per_sec")
    # The whole process as the step runner timed it (start-up, the sample and exit included),
    # the same clock for both sides.
    process = [next((record.get("wall_seconds") for record in records
                     if record["name"] == step and record["status"] == "passed"), None)
               for step in steps]
    gap = None
    if isinstance(ours.get("val_loss"), (int, float)) and \
            isinstance(theirs.get("val_loss"), (int, float)):
        gap = round(ours["val_loss"] - theirs["val_loss"], 4)
    return {
        "minidl": {**{name: ours.get(name) for name in names}, "process_seconds": process[0]},
        "pytorch": {**{name: theirs.get(name) for name in names}, "process_seconds": process[1]},
        "val_loss_minus_pytorch": gap,
        "val_loss_gap_nats": _target(None if gap is None else abs(gap), "<=",
                                     GPT_LOSS_TOLERANCE),
        "wall_seconds_over_pytorch": _ratio(ours.get("wall_seconds"), theirs.get("wall_seconds")),
        "process_seconds_over_pytorch": _ratio(*process),
        "tokens_per_sec_over_pytorch": _ratio(ours.get("tokens_per_sec"),
                                              theirs.get("tokens_per_sec")),
    }


def accuracy_targets(records):
    """The times to accuracy, side by side, and the GPT pair's losses and speeds."""
    def seconds(name):
        return _figures(records, name).get("seconds_to_target")

    return {
        "lenet_seconds_to_0.89": {
            "minidl_cuda_graph": seconds("time to 0.89: train_lenet (CUDA graph)"),
            "minidl_eager": seconds("time to 0.89: train_lenet eager"),
            "pytorch": seconds("time to 0.89: train_lenet_pytorch.py")},
        "resnet18_seconds_to_0.94": {
            "minidl": seconds("time to 0.94: train_cifar10 resnet18"),
            "pytorch": seconds("time to 0.94: train_cifar10_pytorch.py resnet18")},
        "gpt_shakespeare": gpt_targets(records),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("outdir")
    parser.add_argument("--rehearse", action="store_true")
    args = parser.parse_args()
    context = Context(args.rehearse)
    started = datetime.datetime.now(datetime.timezone.utc)
    log_dir = os.path.join(context.work, f"logs-{args.stage}")
    shutil.rmtree(log_dir, ignore_errors=True)
    os.makedirs(log_dir)
    stage_seconds = min(STAGE_SECONDS,
                        int(os.environ.get("MINIDL_GPU_STAGE_SECONDS") or STAGE_SECONDS))
    runner = StageRunner(args.stage, log_dir, stage_seconds - SUMMARY_SECONDS, args.rehearse,
                         context.has_gpu, context.not_checkable(), context.repository)
    setup_seconds = float(os.environ.get("MINIDL_GPU_SETUP_SECONDS", "0"))
    runner.deadline -= setup_seconds  # run.sh's setup counts against the 9 minutes
    print(f"==== tools/gpu/run.sh {args.stage}{' --rehearse' if args.rehearse else ''}: "
          f"build {context.build}, GPU {('sm_' + context.arch) if context.has_gpu else 'none'}",
          flush=True)
    runner.add(setup_record(context, log_dir))
    found_versions = versions(context)
    steps = {"test": test_steps, "bench": bench_steps,
             "accuracy": accuracy_steps}[args.stage](context)
    steps = select_steps(steps, os.environ.get("MINIDL_GPU_STEPS"))
    for step in steps:
        runner.run(step)
    records = runner.records
    summary = {
        "stage": args.stage, "rehearsal": args.rehearse,
        "started_utc": started.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_seconds": round(time.monotonic() - runner.start + setup_seconds, 1),
        "passed": all(record["status"] in ("passed", "skipped") for record in records),
        "versions": found_versions, "totals": report.totals(records)}
    if args.stage == "bench":
        summary["targets"] = bench_targets(records)
    elif args.stage == "accuracy":
        summary["targets"] = accuracy_targets(records)
    summary["steps"] = records
    path, archive = report.write(args.outdir, args.stage, summary, log_dir)
    report.print_table(summary)
    print(f"wrote {path} and {archive}")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
