#!/usr/bin/env bash
# Installs the Debian packages that minidl needs to build, test and run its demo, and only those
# that are missing: when none is, it prints nothing and takes a few milliseconds. The CUDA
# toolkit is not a Debian package; it is used from /usr/local/cuda when it is there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache           # compilers and the build
  libopenblas-dev libspdlog-dev zlib1g-dev           # the library's own dependencies
  libdnnl-dev                                        # CPU convolutions on oneDNN
  nlohmann-json3-dev libcli11-dev                    # checkpoints, the tools' command lines
  libopenmpi-dev openmpi-bin                         # distributed training, mpirun tests
  libgtest-dev libgmock-dev libbenchmark-dev         # tests and benchmarks
  clang-format clang-tidy                            # tools/test.sh's format and tidy checks
  clang libclang-rt-dev                              # the sanitizer builds and the fuzzers
  dataset-fashion-mnist                              # the demo's data (/usr/share/datasets)
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "bootstrap.sh: this script installs Debian packages; install these by hand:" \
       "${packages[*]}" >&2
  exit 1
fi

# One dpkg-query for all of them; names it does not know are simply absent from its output.
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
missing=()
for package in "${packages[@]}"; do
  grep -qx "${package} installed" <<<"${installed}" || missing+=("${package}")
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "bootstrap.sh: missing ${missing[*]}, and not root and no sudo to install them" >&2
    exit 1
  }
  sudo=(sudo)
fi
echo "bootstrap.sh: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}"
