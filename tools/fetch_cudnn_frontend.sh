#!/usr/bin/env bash
# The C++ headers of NVIDIA's cuDNN frontend, which minidl's cuDNN attention
# (ops/cuda/attention_cudnn.cpp) is built on: downloads one pinned wheel of the PyPI package
# nvidia-cudnn-frontend 1.32.0 (the headers are the same in each of its wheels; the CPython 3.11
# manylinux x86-64 one is pinned by its sha256, whatever Python runs pip), and unpacks its
# include/ folder and licences (MIT; Apache-2.0 for the Python parts, not used) into
#
#   DIR (default $MINIDL_CUDNN_FRONTEND_DIR, else ${XDG_CACHE_HOME:-~/.cache}/minidl/cudnn-frontend)
#
# where CMakeLists.txt looks for DIR/include/cudnn_frontend.h (configure again after the first
# run). tools/test.sh runs it for CUDA builds; run it by hand for your own. Idempotent: once DIR
# holds this wheel's headers (its sha256 in DIR/fetched-from), it says so and exits. Needs
# python3 with pip, and the network for the first download (about 11 MB).
#
#   tools/fetch_cudnn_frontend.sh [--out DIR]
set -euo pipefail

readonly package_version="nvidia-cudnn-frontend==1.32.0"
readonly wheel_name="nvidia_cudnn_frontend-1.32.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
readonly wheel_sha256="c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0"

out_dir=${MINIDL_CUDNN_FRONTEND_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/minidl/cudnn-frontend}

fail() {
  echo "fetch_cudnn_frontend.sh: $*" >&2
  exit 1
}

while (($# > 0)); do
  case $1 in
    --out) out_dir=${2:?--out needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument '$1'; usage: tools/fetch_cudnn_frontend.sh [--out DIR]" ;;
  esac
done

stamp="${out_dir}/fetched-from"
if [[ -f ${out_dir}/include/cudnn_frontend.h && -f ${stamp} ]] &&
   [[ $(cat "${stamp}") == "${wheel_sha256}  ${wheel_name}" ]]; then
  echo "fetch_cudnn_frontend.sh: ${out_dir}/include already holds ${package_version}'s headers"
  exit 0
fi

python3 -m pip --version >/dev/null 2>&1 ||
  fail "python3 with pip is needed to download ${package_version} (Debian: apt-get install python3-pip)"
mkdir -p "$(dirname "${out_dir}")"
work=$(mktemp -d "${out_dir}.partial.XXXXXX")
trap 'rm -rf "${work}"' EXIT
echo "fetch_cudnn_frontend.sh: downloading ${package_version} (a wheel of about 11 MB, for its headers)"
python3 -m pip download --quiet --no-deps --only-binary :all: --platform manylinux_2_28_x86_64 \
  --python-version 3.11 --implementation cp --abi cp311 "${package_version}" -d "${work}" ||
  fail "pip download ${package_version} failed (is the network, or a PyPI mirror, reachable?)"
[[ -f ${work}/${wheel_name} ]] || fail "pip download gave no ${wheel_name} in ${work}: $(ls "${work}")"
found_sha256=$(sha256sum "${work}/${wheel_name}" | cut -d' ' -f1)
[[ ${found_sha256} == "${wheel_sha256}" ]] ||
  fail "${wheel_name} has sha256 ${found_sha256}, expected ${wheel_sha256}; not using it"

# A wheel is a zip file; only the headers and the licences are kept.
python3 - "${work}/${wheel_name}" "${work}/unpacked" <<'PYTHON' ||
import sys
import zipfile

wheel, destination = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    kept = [name for name in archive.namelist()
            if name.startswith("include/") or "/licenses/" in name]
    archive.extractall(destination, kept)
PYTHON
  fail "cannot unpack ${wheel_name}"
[[ -f ${work}/unpacked/include/cudnn_frontend.h ]] || fail "${wheel_name} holds no include/cudnn_frontend.h"
mv "${work}"/unpacked/nvidia_cudnn_frontend-*.dist-info/licenses "${work}/unpacked/licenses"
rmdir "${work}"/unpacked/nvidia_cudnn_frontend-*.dist-info
echo "${wheel_sha256}  ${wheel_name}" >"${work}/unpacked/fetched-from"

# Replaced whole, so a reader never sees half of it.
rm -rf "${out_dir}"
mv "${work}/unpacked" "${out_dir}"
echo "fetch_cudnn_frontend.sh: ${out_dir}/include holds ${package_version}'s headers"
