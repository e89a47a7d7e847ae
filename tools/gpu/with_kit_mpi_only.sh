#!/usr/bin/env bash
# Runs COMMAND so that the Open MPI it uses can only be the GPU kit's (tools/gpu/kit_mpi_env.sh
# set up by run.sh): first it checks that mpirun, and libmpi as each program among the arguments
# resolves it, lie under the kit's unpacked root; then, where this machine has an Open MPI of its
# own (Debian's packages that the kit also holds, as dpkg knows them), it covers their files inside
# a private mount namespace (unshare -m; each file under a bind mount of /dev/null), so that a
# path that still led to them would fail instead of passing quietly.
#
#   MINIDL_GPU_KIT_MPI_ROOT=ROOT tools/gpu/with_kit_mpi_only.sh COMMAND [ARGS...]
#
# ROOT is the unpacked root/ of the kit's deps.tar.xz; MINIDL_GPU_KIT_MPI_PACKAGES lists the
# kit's Open MPI packages (run.sh reads them from the manifest). Prints first, one line each:
#   "kit Open MPI: mpirun PATH", "kit Open MPI: PROGRAM: libmpi.so.40 => PATH"
#   "system Open MPI: masked (N files of PACKAGES)", or "system Open MPI: none to mask (REASON)"
#   (the bare GPU machine), or "system Open MPI: not masked (REASON)": the namespace could not be
#   made (not root; a container without CAP_SYS_ADMIN, as CI's may be), and COMMAND runs all the
#   same, on the kit's Open MPI as resolved above.
# Exits 1 without running COMMAND when something resolves outside the kit; else COMMAND's status.
set -uo pipefail

usage() {
  echo "usage: MINIDL_GPU_KIT_MPI_ROOT=ROOT tools/gpu/with_kit_mpi_only.sh COMMAND [ARGS...]" >&2
  exit 2
}

# Inside the namespace: cover FILES (after --), then run the command.
if [[ ${1:-} == --inside ]]; then
  shift
  files=()
  while (($# > 0)) && [[ $1 != -- ]]; do
    files+=("$1")
    shift
  done
  shift
  masked=0 failures=0
  for file in "${files[@]}"; do
    if mount --bind /dev/null "${file}" 2>/dev/null; then
      masked=$((masked + 1))
    else
      failures=$((failures + 1))
    fi
  done
  if ((failures > 0)); then
    echo "system Open MPI: not masked (mount --bind failed for ${failures} of ${#files[@]} files)"
  else
    echo "system Open MPI: masked (${masked} files of ${MINIDL_GPU_KIT_MPI_PACKAGES})"
  fi
  exec "$@"
fi

(($# >= 1)) || usage
root=${MINIDL_GPU_KIT_MPI_ROOT:-}
[[ -n ${root} && -d ${root} ]] || {
  echo "kit Open MPI: FAILED: MINIDL_GPU_KIT_MPI_ROOT (${root:-unset}) is not the kit's root" >&2
  exit 1
}
root=$(realpath "${root}")

outside=()
mpirun=$(command -v mpirun || true)
mpirun_file=$(realpath "${mpirun:-/nonexistent}" 2>/dev/null || echo "${mpirun:-none}")
echo "kit Open MPI: mpirun ${mpirun:-none} -> ${mpirun_file}"
[[ ${mpirun_file} == "${root}"/* ]] || outside+=("mpirun (${mpirun_file})")
for argument in "$@"; do
  [[ -f ${argument} && -x ${argument} ]] || continue
  [[ $(head -c 4 "${argument}" 2>/dev/null) == $'\x7fELF' ]] || continue
  libmpi=$(ldd "${argument}" 2>/dev/null | awk '$1 ~ /^libmpi\.so/ { print $3; exit }')
  [[ -n ${libmpi} ]] || continue
  libmpi_file=$(realpath "${libmpi}" 2>/dev/null || echo "${libmpi}")
  echo "kit Open MPI: ${argument##*/}: libmpi => ${libmpi_file}"
  [[ ${libmpi_file} == "${root}"/* ]] || outside+=("${argument##*/}'s libmpi (${libmpi_file})")
done
if ((${#outside[@]} > 0)); then
  echo "kit Open MPI: FAILED: resolved outside the kit's ${root}: ${outside[*]}"
  exit 1
fi

# The system's files of the kit's Open MPI packages (regular files; a link leads to one of them).
packages=()
if command -v dpkg-query >/dev/null; then
  for package in ${MINIDL_GPU_KIT_MPI_PACKAGES:-}; do
    [[ $(dpkg-query -W -f='${Status}' "${package}" 2>/dev/null) == "install ok installed" ]] &&
      packages+=("${package}")
  done
fi
if [[ -z ${MINIDL_GPU_KIT_MPI_PACKAGES:-} ]]; then
  echo "system Open MPI: none to mask (the kit's manifest names no Open MPI packages)"
  exec "$@"
fi
if ((${#packages[@]} == 0)); then
  echo "system Open MPI: none to mask (dpkg knows none of ${MINIDL_GPU_KIT_MPI_PACKAGES})"
  exec "$@"
fi
mapfile -t files < <(dpkg -L "${packages[@]}" 2>/dev/null | grep -v '^/usr/share/\(doc\|man\)/' |
  while IFS= read -r file; do [[ -f ${file} && ! -L ${file} ]] && echo "${file}"; done)
if ! error=$(unshare -m --propagation private true 2>&1); then
  echo "system Open MPI: not masked (unshare -m: ${error:-failed}; ${#files[@]} files of" \
    "${packages[*]} stay visible)"
  exec "$@"
fi
MINIDL_GPU_KIT_MPI_PACKAGES="${packages[*]}" exec unshare -m --propagation private \
  "${BASH_SOURCE[0]}" --inside "${files[@]}" -- "$@"
