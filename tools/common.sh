# shellcheck shell=bash
# Shared by tools/demo.sh and tools/test.sh (sourced, not run): where the repository is, and how
# the main build in build/ is configured, so both scripts share one build and neither
# reconfigures what the other built.

MINIDL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck disable=SC2034  # used by the scripts that source this file
MINIDL_JOBS=$(nproc)

# ccache (used by CMakeLists.txt when installed) keys on absolute paths, which is what lets the
# e2e.install_subdirectory test reuse this build's compilations. (CCACHE_BASEDIR would let
# clones in other directories share the cache, but it makes paths relative to each build
# directory, and that test's build directory sits deeper, so all its compilations missed:
# 382 s instead of about 10 s in a measured run.)

# ON when the CUDA toolkit is in /usr/local/cuda, else OFF; the environment variable
# MINIDL_CUDA (AUTO, ON or OFF) overrides. CMAKE_CUDA_ARCHITECTURES defaults to 80;90 in
# CMakeLists.txt; the environment variable CUDAARCHS overrides it (e.g. CUDAARCHS=native).
minidl_cuda_setting() {
  if [[ -n ${MINIDL_CUDA:-} ]]; then
    echo "${MINIDL_CUDA}"
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
    echo ON
  else
    echo OFF
  fi
}

# minidl_configure DIR [cmake arguments...]: configures DIR with Ninja. A DIR configured with
# another generator (by hand) is the scripts' own, so it is removed and configured afresh.
minidl_configure() {
  local dir=$1
  shift
  if [[ -f ${dir}/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "${dir}/CMakeCache.txt"; then
    echo "${dir} was configured with another generator; configuring it afresh"
    rm -rf "${dir}"
  fi
  cmake -S "${MINIDL_ROOT}" -B "${dir}" -G Ninja "$@"
}

# minidl_configure_main [CMAKE ARGUMENTS...]: build/, as tools/demo.sh and tools/test.sh use it.
minidl_configure_main() {
  minidl_configure "${MINIDL_ROOT}/build" -DCMAKE_BUILD_TYPE=Release \
    -DMINIDL_CUDA="$(minidl_cuda_setting)" "$@"
}

# minidl_timed NAME COMMAND...: runs COMMAND, and records how long it took in MINIDL_TIMINGS. The
# line is also printed as the phase ends ("---- took: NAME  N s, SECONDS s in"), so a run that
# is stopped part-way (CI's time limit) still shows where its time went.
MINIDL_TIMINGS=()
minidl_timed() {
  local name=$1 start=${SECONDS} status=0
  shift
  "$@" || status=$?
  MINIDL_TIMINGS+=("$(printf '%-34s %5d s' "${name}" $((SECONDS - start)))")
  printf -- '---- took: %s, %d s in\n' "${MINIDL_TIMINGS[-1]}" "${SECONDS}"
  return "${status}"
}
