#!/usr/bin/env bash
# Builds minidl and runs every test suite, then the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer, and the threaded ones under ThreadSanitizer. Runnable from any
# directory; CI runs it through .ci/run.
#
#   1. tools/bootstrap.sh (installs missing Debian packages), and for a CUDA build
#      tools/fetch_cudnn_frontend.sh (the cuDNN frontend's headers); tools/format.sh --check; after the
#      main build, tools/tidy.sh --since-clean (clang-tidy over the .cpp files build/ compiles
#      that changed since .ci/tidy-clean's commit)
#   2. build/: Release, Ninja, ccache, CUDA when /usr/local/cuda/bin/nvcc exists (environment
#      MINIDL_CUDA=AUTO|ON|OFF overrides), oneDNN; builds everything; ctest (labels unit, gpu,
#      e2e, mpi); the unit tests of oneDNN's ops again with it switched off (MINIDL_ONEDNN=0)
#   3. the GPU kit (tools/gpu/check_kit.sh): tools/gpu/pack.sh into build/gpu-kit-check, a fresh
#      CPU-only configure that finds every dependency in the kit alone, and tools/gpu/run.sh test
#      and bench --rehearse against build/ (the whole GPU sequence, its CUDA steps only checked)
#   4. build-asan/: CPU-only, Debug, -DMINIDL_SANITIZE=address,undefined; builds the unit test
#      programs; ctest -L unit
#   5. build-tsan/: CPU-only, Debug, -DMINIDL_SANITIZE=thread, -DMINIDL_ONEDNN=OFF (the build
#      switch); the loader's, thread pool's and process groups' tests, and the 2-rank MPI tests
#
# Prints how long each phase took and ends with "N passed, N failed, N skipped" over both test
# runs. Exits non-zero when a build or any test failed.
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "${MINIDL_ROOT}"

# mpirun refuses to run as root unless told; CI and the Debian machines here run as root.
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

total_passed=0
total_failed=0
total_skipped=0

# run_ctest BUILD_DIR [ctest arguments...]: runs CTest, keeps its log in BUILD_DIR/ctest.log,
# and adds its counts to the totals. Returns non-zero when a test failed or none ran.
run_ctest() {
  local dir=$1 status=0
  shift
  ctest --test-dir "${dir}" --output-on-failure --no-tests=error --timeout 600 \
    -j "${MINIDL_JOBS}" "$@" 2>&1 | tee "${dir}/ctest.log" || status=$?
  # "100% tests passed, 0 tests failed out of 57" (CTest 4: "100% tests passed out of 57");
  # skipped tests count as passed there and are listed after it as "(Skipped)".
  local summary total failed=0 skipped
  summary=$(grep -E '^[0-9]+% tests passed(, [0-9]+ tests? failed)? out of [0-9]+' "${dir}/ctest.log" | tail -n 1 || true)
  if [[ -z ${summary} ]]; then
    echo "test.sh: CTest in ${dir} printed no summary" >&2
    total_failed=$((total_failed + 1))
    return 1
  fi
  if [[ ${summary} == *failed* ]]; then
    failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"${summary}")
  fi
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"${summary}")
  skipped=$(grep -cE '\((Skipped|Disabled)\)$' "${dir}/ctest.log" || true)
  total_passed=$((total_passed + total - failed - skipped))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
  return "${status}"
}

print_summary() {
  echo "==== timings ===="
  printf '%s\n' "${MINIDL_TIMINGS[@]}"
  printf '%-34s %5d s\n' "total" "${SECONDS}"
  echo "${total_passed} passed, ${total_failed} failed, ${total_skipped} skipped"
}

# A build or configure step that fails ends the run here, counted as one failure.
stop_on_build_failure() {
  echo "test.sh: $1 failed" >&2
  total_failed=$((total_failed + 1))
  print_summary
  exit 1
}

# The unit test programs of a build: minidl_<folder>_tests, not the _cuda_tests.
unit_test_targets() {
  ninja -C "$1" -t targets all | sed -nE 's/^(minidl_[A-Za-z0-9_]+_tests): phony$/\1/p' |
    grep -v '_cuda_tests$' | sort -u
}

minidl_timed "bootstrap" bash "${MINIDL_ROOT}/tools/bootstrap.sh"
# The cuDNN frontend's headers (a PyPI wheel, about 11 MB once), so that a CUDA build compiles
# and tests the cuDNN attention too (ops/cuda/attention_cudnn.cpp).
if [[ $(minidl_cuda_setting) != OFF ]]; then
  minidl_timed "cuDNN frontend headers" bash "${MINIDL_ROOT}/tools/fetch_cudnn_frontend.sh" ||
    stop_on_build_failure "tools/fetch_cudnn_frontend.sh"
fi

# ---- 0. formatting (.clang-format): a file that is not formatted counts as one failure ----
format_status=0
minidl_timed "format check" bash "${MINIDL_ROOT}/tools/format.sh" --check || {
  total_failed=$((total_failed + 1))
  format_status=1
}

# ---- 1. the main build and every suite ----
echo "==== build/ (CUDA: $(minidl_cuda_setting)) ===="
# Warnings in minidl's own sources fail CI (a user's build, tools/demo.sh's, only shows them).
minidl_timed "build/: configure" minidl_configure_main -DMINIDL_WARNINGS_AS_ERRORS=ON ||
  stop_on_build_failure "configuring build/"
minidl_timed "build/: build (${MINIDL_JOBS} jobs)" cmake --build build -j "${MINIDL_JOBS}" ||
  stop_on_build_failure "building build/"
main_status=0
minidl_timed "build/: ctest (all labels)" run_ctest build || main_status=$?
# The CPU tests of the ops oneDNN runs (ops/onednn.h: convolutions, batch norm, matrix products)
# and of the models and mixed precision built on them, again with oneDNN switched off, so that
# the path that float64, small convolutions and -DMINIDL_ONEDNN=OFF builds use passes them too:
# their suites, and the operator table's rows of those ops (257 of the 2087 unit tests; all of
# them took 507 s of a CI run on 2 cores shared with another build).
onednn_op_tests='(^|/)(Conv|BatchNorm|Onednn|OneDnn|LeNet|ResNet|BasicBlock|Matmul|Linear|Bmm|Einsum|MixedPrecision|Autocast)[A-Za-z0-9_]*[.]|[.][A-Za-z0-9_]+/(conv|batch_norm|matmul|linear|addmm|baddbmm|bmm|einsum)'
MINIDL_ONEDNN=0 minidl_timed "build/: ctest oneDNN's ops, MINIDL_ONEDNN=0" run_ctest build -L unit \
  -R "${onednn_op_tests}" || main_status=$?

# ---- 1b. clang-tidy (.clang-tidy) over the .cpp files changed since the tree was last clean ----
# .ci/tidy-clean names the last commit at which the whole tree was clean (tools/tidy.sh --all
# --record), so the files changed since keep it clean: the whole tree took 18 of a cold CI run's
# minutes on 2 cores (CONTRIBUTING.md, "Testing").
tidy_status=0
minidl_timed "clang-tidy: changed since clean" bash "${MINIDL_ROOT}/tools/tidy.sh" --since-clean \
  --build "${MINIDL_ROOT}/build" || {
  echo "test.sh: tools/tidy.sh found problems (above)" >&2
  total_failed=$((total_failed + 1))
  tidy_status=1
}

# ---- 2. the GPU kit, rehearsed without a GPU (docs/gpu.md) ----
# Each part that fails counts as one failed test.
gpu_kit_status=0
check_gpu_kit() {
  bash "${MINIDL_ROOT}/tools/gpu/check_kit.sh" "$1" "${MINIDL_ROOT}/build" || {
    echo "test.sh: tools/gpu/check_kit.sh $1 failed" >&2
    total_failed=$((total_failed + 1))
    gpu_kit_status=1
  }
}
echo "==== GPU kit (tools/gpu/) ===="
minidl_timed "gpu kit: pack, configure in it" check_gpu_kit configure
minidl_timed "gpu kit: rehearse its stages" check_gpu_kit rehearse

# ---- 3. sanitizers over the unit tests ----
# halt_on_error: the first finding ends the test program, so it fails. detect_leaks stays on:
# LeakSanitizer reports only memory that nothing points to any more, and minidl's and
# OpenBLAS's thread pools and buffers stay reachable until exit, so they are not reported.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# Debug (-O0), not RelWithDebInfo: with the sanitizers on, GCC takes minutes per template-heavy
# kernel file at -O2 (ops/cpu/elementwise.cpp: 27 s at -O0, 92 s at -O1, 10 min at -O2), while
# the unit tests run in seconds either way. _GLIBCXX_ASSERTIONS adds bounds checks to std::vector.
# Both sanitizer builds use clang++ where it is installed (tools/bootstrap.sh installs it): at
# -O0 with the sanitizers on it compiles minidl in half GCC's time (tests/nn/layers_test.cpp
# 7.2 s against 14.9 s, ops/cpu/elementwise.cpp 58 s against more than 140 s), and GCC's ASan
# build alone ran past 25 minutes of a cold CI run.
sanitizer_compiler=g++
command -v clang++ >/dev/null && sanitizer_compiler=clang++
# minidl_configure_sanitizer DIR [cmake arguments...]: a DIR configured with the other compiler
# is configured afresh (CMake cannot switch a build directory's compiler in place).
minidl_configure_sanitizer() {
  local dir=$1 compiler
  compiler=$(command -v "${sanitizer_compiler}")
  if [[ -f ${dir}/CMakeCache.txt ]] &&
    ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=${compiler}" "${dir}/CMakeCache.txt"; then
    echo "${dir} was configured with another compiler; configuring it afresh with ${compiler}"
    rm -rf "${dir}"
  fi
  minidl_configure "$@" -DCMAKE_CXX_COMPILER="${compiler}"
}
echo "==== build-asan/ (address,undefined; ${sanitizer_compiler}) ===="
minidl_timed "build-asan/: configure" minidl_configure_sanitizer "${MINIDL_ROOT}/build-asan" \
  -DCMAKE_BUILD_TYPE=Debug -DMINIDL_CUDA=OFF -DMINIDL_SANITIZE=address,undefined \
  -DMINIDL_BUILD_TOOLS=OFF -DCMAKE_CXX_FLAGS=-D_GLIBCXX_ASSERTIONS ||
  stop_on_build_failure "configuring build-asan/"
mapfile -t asan_targets < <(unit_test_targets build-asan)
((${#asan_targets[@]} > 0)) || stop_on_build_failure "finding the unit test programs in build-asan/"
minidl_timed "build-asan/: build unit tests" cmake --build build-asan -j "${MINIDL_JOBS}" \
  --target "${asan_targets[@]}" || stop_on_build_failure "building build-asan/"
# MixedPrecisionTraining trains LeNet three times on real data, and GPTExactness takes 20 steps
# of a 0.8M-parameter GPT: seconds in build/, minutes to more than the 600 s timeout at -O0
# under the sanitizers, which still check autocast, the GradScaler and the GPT's layers through
# their own unit tests. The million-node graphs (DeepGraph), the 11M-parameter ResNet-18s and
# GPT-2 small's parameter count took 640 of the 1421 test-seconds of the ASan run on clang
# (DeepGraph's backward alone 158 s); smaller graphs and models check the same code there.
asan_status=0
minidl_timed "build-asan/: ctest -L unit" run_ctest build-asan -L unit \
  -E '^(MixedPrecisionTraining|GPTExactness|DeepGraph|ResNet18Test|ResNet18)[.]|^GPT[.]ParameterCountsOfTheRecipeAndOfGPT2Small$' || asan_status=$?

# ---- 4. ThreadSanitizer over the threaded parts: loader, thread pool, process groups ----
# Open MPI is not built with TSan, so reports from inside its libraries are suppressed
# (tests/sanitizers/tsan.supp); races in minidl's frames are still reported.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=${MINIDL_ROOT}/tests/sanitizers/tsan.supp"
echo "==== build-tsan/ (thread; ${sanitizer_compiler}) ===="
minidl_timed "build-tsan/: configure" minidl_configure_sanitizer "${MINIDL_ROOT}/build-tsan" \
  -DCMAKE_BUILD_TYPE=Debug -DMINIDL_CUDA=OFF -DMINIDL_SANITIZE=thread -DMINIDL_BUILD_TOOLS=OFF \
  -DMINIDL_ONEDNN=OFF ||
  stop_on_build_failure "configuring build-tsan/"
tsan_targets=(minidl_data_tests minidl_core_tests minidl_distributed_tests)
# `ninja -t query` rather than a `targets | grep -q` pipe: grep -q exits at its match, ninja then
# dies of SIGPIPE, and under pipefail the test read as "no MPI" and skipped the MPI run silently.
if ninja -C build-tsan -t query minidl_distributed_mpi_tests >/dev/null 2>&1; then
  tsan_targets+=(minidl_distributed_mpi_tests)
else
  echo "build-tsan/: no MPI in this build; the 2-rank MPI tests do not run under TSan"
fi
minidl_timed "build-tsan/: build" cmake --build build-tsan -j "${MINIDL_JOBS}" \
  --target "${tsan_targets[@]}" || stop_on_build_failure "building build-tsan/"
tsan_status=0
# The loader's tests whole; of core, the thread pool and the pinned pool.
minidl_timed "build-tsan/: ctest loader, threads, groups" run_ctest build-tsan -L unit \
  -R '(^|/)(DataLoader|ThrowingWorker|WorkerCudaDevice|ThreadPool|PinnedPool|DistributedSingleProcess|CollectiveWatch)[.]' ||
  tsan_status=$?
if [[ " ${tsan_targets[*]} " == *" minidl_distributed_mpi_tests "* ]]; then
  minidl_timed "build-tsan/: ctest mpi (2 ranks)" run_ctest build-tsan \
    -R '^mpi[.]collectives_and_ddp_np2$' || tsan_status=$?
fi

print_summary
if ((format_status != 0 || main_status != 0 || tidy_status != 0 || gpu_kit_status != 0 ||
  asan_status != 0 || tsan_status != 0 || total_failed != 0)); then
  exit 1
fi
