#!/usr/bin/env bash
# Runs the checks of .clang-tidy over minidl's C++ sources (.cpp; CUDA files are not checked),
# with the compile commands of a build directory. Exits non-zero on any finding (the checks are
# WarningsAsErrors).
#
#   tools/tidy.sh [--build DIR] [--all | --since REV]
#
# Default: the .cpp files that the last commit changed (HEAD against its first parent), a quick
# check while working. --since REV: the files changed since REV. --all: every .cpp file the build
# compiles, what tools/test.sh runs in CI (about 5 minutes on 2 cores). --build: the build
# directory whose compile_commands.json is used (default build/).
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "${MINIDL_ROOT}"

build_dir=build
mode=last-commit
since=
while (($# > 0)); do
  case $1 in
    --build) build_dir=$2; shift 2 ;;
    --all) mode=all; shift ;;
    --since) mode=since; since=$2; shift 2 ;;
    *) echo "tidy.sh: unknown argument '$1'; expected --build DIR, --all or --since REV" >&2; exit 2 ;;
  esac
done

command -v clang-tidy >/dev/null || {
  echo "tidy.sh: clang-tidy is not installed (Debian: clang-tidy; tools/bootstrap.sh)" >&2
  exit 1
}
[[ -f ${build_dir}/compile_commands.json ]] || {
  echo "tidy.sh: ${build_dir}/compile_commands.json is missing; configure ${build_dir} first" >&2
  exit 1
}

case ${mode} in
  all) mapfile -t files < <(git ls-files -- '*.cpp') ;;
  since) mapfile -t files < <(git diff --name-only --diff-filter=d "${since}" -- '*.cpp') ;;
  last-commit)
    if git rev-parse --verify --quiet HEAD~1 >/dev/null; then
      mapfile -t files < <(git diff --name-only --diff-filter=d HEAD~1 HEAD -- '*.cpp')
    else
      echo "tidy.sh: HEAD has no parent (a shallow clone?); checking no files"
      files=()
    fi
    ;;
esac
# Only files the build compiles (tools/ may be off, fuzzers have a build of their own).
checked=()
for file in "${files[@]}"; do
  grep -q "\"file\": \"${MINIDL_ROOT}/${file}\"" "${build_dir}/compile_commands.json" &&
    checked+=("${file}")
done
echo "tidy.sh: ${#checked[@]} of ${#files[@]} .cpp files selected are compiled in ${build_dir}; checking them with $(clang-tidy --version | grep -o 'version [0-9.]*')"
((${#checked[@]} > 0)) || exit 0
# One clang-tidy per file, MINIDL_JOBS at a time; a finding fails its file.
printf '%s\n' "${checked[@]}" |
  xargs -P "${MINIDL_JOBS}" -I{} clang-tidy --quiet -p "${build_dir}" {}
