#!/usr/bin/env bash
# Formats minidl's C++ and CUDA sources with clang-format and the repository's .clang-format
# (Google's style, 100 columns).
#
#   tools/format.sh            rewrites every tracked .h .cpp .cu .cuh file that is not formatted
#   tools/format.sh --check    changes nothing; lists the files that are not formatted and exits
#                              non-zero when there is one (tools/test.sh runs this)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || {
  echo "format.sh: clang-format is not installed (Debian: clang-format; tools/bootstrap.sh)" >&2
  exit 1
}
# Tracked files, not the symbolic links (include/minidl/ mirrors the source folders).
mapfile -t sources < <(git ls-files -s -- '*.h' '*.cpp' '*.cu' '*.cuh' | awk '$1 != "120000" { print $4 }')
if [[ ${1:-} == --check ]]; then
  unformatted=()
  for file in "${sources[@]}"; do
    clang-format --style=file "${file}" | cmp -s - "${file}" || unformatted+=("${file}")
  done
  if ((${#unformatted[@]} > 0)); then
    printf '%s\n' "${unformatted[@]}"
    echo "format.sh: ${#unformatted[@]} of ${#sources[@]} files are not formatted; run tools/format.sh" >&2
    exit 1
  fi
  echo "format.sh: all ${#sources[@]} C++ and CUDA sources are formatted ($(clang-format --version))"
else
  clang-format --style=file -i "${sources[@]}"
fi
