#!/usr/bin/env bash
# The GPU kit's checks without a GPU (tools/test.sh runs both parts after the main build's tests;
# each is runnable alone). Scratch lives in BUILD_DIR/gpu-kit-check (BUILD_DIR defaults to build/).
#
#   tools/gpu/check_kit.sh configure [BUILD_DIR]
#       tools/gpu/pack.sh into BUILD_DIR/gpu-kit-check/kit (its .debs cached beside it), its
#       archive unpacked into a scratch prefix, and a fresh CPU-only configure that may find
#       dependencies only in that prefix (CMAKE_FIND_ROOT_PATH, modes ONLY) and MPI through the
#       kit's relocated mpicxx: the kit is enough for a build, and CMakeCache.txt shows each
#       dependency (Open MPI's header, library and mpiexec among them) found inside the prefix.
#   tools/gpu/check_kit.sh rehearse [BUILD_DIR]
#       tools/gpu/run.sh test, bench and accuracy --rehearse against BUILD_DIR (built already) with that
#       kit: every step in order, CUDA steps checked and skipped; each summary must be valid
#       JSON of the right shape, and the log parsers' tests pass.
set -euo pipefail

usage() {
  echo "usage: tools/gpu/check_kit.sh configure|rehearse [BUILD_DIR]" >&2
  exit 2
}
(($# >= 1)) || usage
repository=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath -m "${2:-${repository}/build}")
scratch=${build}/gpu-kit-check
kit=${scratch}/kit

fail() {
  echo "check_kit.sh: $*" >&2
  exit 1
}

# Each dependency that CMakeLists.txt, tests/ and tools/ find: the CMakeCache.txt entry that says
# where it was found.
readonly found_entries=(spdlog_DIR fmt_DIR ZLIB_INCLUDE_DIR ZLIB_LIBRARY_RELEASE nlohmann_json_DIR
  MINIDL_CBLAS_INCLUDE MINIDL_OPENBLAS GTest_DIR CLI11_DIR benchmark_DIR MPI_CXX_COMPILER
  MPI_CXX_HEADER_DIR MPI_mpi_LIBRARY MPIEXEC_EXECUTABLE)

check_configure() {
  MINIDL_GPU_DEB_CACHE=${scratch}/debs "${repository}/tools/gpu/pack.sh" "${kit}"
  local prefix=${scratch}/prefix configured=${scratch}/configure
  rm -rf "${prefix}" "${configured}"
  mkdir -p "${prefix}"
  tar -xJf "${kit}/deps.tar.xz" -C "${prefix}"
  # The packages lie under root/usr as under /usr: CMake searches <root>/usr/... for /usr/...,
  # and nothing outside the root (programs excepted: the compiler, ccache, python3; MPI's wrapper
  # and mpiexec are given, the kit's, relocated as run.sh does it).
  # shellcheck source=tools/gpu/kit_mpi_env.sh
  source "${repository}/tools/gpu/kit_mpi_env.sh"
  kit_mpi_env "${prefix}/root" ||
    fail "the kit holds no Open MPI (no ${prefix}/root/usr/bin/mpirun)"
  cmake -S "${repository}" -B "${configured}" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMINIDL_CUDA=OFF -DCMAKE_FIND_ROOT_PATH="${prefix}/root" \
    -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY \
    -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER \
    -DMPI_CXX_COMPILER="${prefix}/root/usr/bin/mpicxx" \
    -DMPIEXEC_EXECUTABLE="${prefix}/root/usr/bin/mpiexec" >"${scratch}/configure.log" 2>&1 ||
    {
      cat "${scratch}/configure.log" >&2
      fail "the CPU configure with only the kit's prefix failed"
    }
  local entry value outside=()
  for entry in "${found_entries[@]}"; do
    value=$(sed -n "s/^${entry}:[A-Z]*=//p" "${configured}/CMakeCache.txt")
    printf '  %-22s %s\n' "${entry}" "${value:-(not found)}"
    [[ ${value} == "${prefix}/root/"* ]] || outside+=("${entry}=${value:-(not found)}")
  done
  ((${#outside[@]} == 0)) ||
    fail "found outside the kit's prefix ${prefix}/root: ${outside[*]}"
  grep -q '^-- minidl: MPI ON$' "${scratch}/configure.log" ||
    fail "the configure with the kit's Open MPI did not build minidl with MPI" \
      "(${scratch}/configure.log)"
  echo "check_kit.sh: a CPU-only configure found every dependency in the kit's prefix"
}

# Checks OUTDIR after run.sh STAGE: the summary is JSON (json.tool) of the shape docs/gpu.md
# describes, and nothing else but the log archive is there.
check_outdir() {
  local stage=$1 outdir=$2
  python3 -m json.tool "${outdir}/summary-${stage}.json" >/dev/null ||
    fail "${outdir}/summary-${stage}.json is not valid JSON"
  python3 - "${outdir}" "${stage}" <<'PYTHON' || fail "run.sh ${stage} --rehearse: bad summary"
import json, os, sys
outdir, stage = sys.argv[1:]
assert sorted(os.listdir(outdir)) == [f"logs-{stage}.tar.xz", f"summary-{stage}.json"], \
    os.listdir(outdir)
summary = json.load(open(os.path.join(outdir, f"summary-{stage}.json")))
for key in ("stage", "rehearsal", "wall_seconds", "passed", "versions", "totals", "steps"):
    assert key in summary, f"no {key}"
assert summary["stage"] == stage and summary["rehearsal"] is True and summary["passed"], summary
steps = summary["steps"]
assert steps[0]["name"] == "setup" and len(steps) >= 5, [step["name"] for step in steps]
for step in steps:
    assert {"name", "command", "status", "exit_status", "wall_seconds"} <= set(step), step
    assert step["status"] in ("passed", "skipped"), step
    if step.get("reason") == "no GPU" and step["command"]:
        assert step["checks"] and all(check["ok"] is not False for check in step["checks"]), step
print(f"ok: summary-{stage}.json: {len(steps)} steps, {summary['wall_seconds']} s, "
      f"{summary['totals']}")
PYTHON
}

check_rehearse() {
  [[ -f ${kit}/deps.tar.xz ]] || fail "no kit in ${kit}: run tools/gpu/check_kit.sh configure first"
  local stage outdir
  for stage in test bench accuracy; do
    outdir=${scratch}/out-${stage}
    rm -rf "${outdir}"
    MINIDL_GPU_KIT=${kit} MINIDL_GPU_WORK=${scratch}/work MINIDL_GPU_BUILD_DIR=${build} \
      "${repository}/tools/gpu/run.sh" "${stage}" "${outdir}" --rehearse ||
      fail "tools/gpu/run.sh ${stage} --rehearse failed (${outdir}/summary-${stage}.json)"
    check_outdir "${stage}" "${outdir}"
  done
  python3 "${repository}/tools/gpu/log_parsers_test.py"
}

case $1 in
  configure) check_configure ;;
  rehearse) check_rehearse ;;
  *) usage ;;
esac
