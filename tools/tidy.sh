#!/usr/bin/env bash
# Runs the checks of .clang-tidy over minidl's C++ sources (.cpp; CUDA files are not checked),
# with the compile commands of a build directory. Exits non-zero on any finding (the checks are
# WarningsAsErrors).
#
#   tools/tidy.sh [--build DIR] [--all [--record] | --since REV | --since-clean]
#
# Default: the .cpp files that the last commit changed (HEAD against its first parent), a quick
# check while working. --since REV: the files changed since REV. --all: every .cpp file the build
# compiles (18 minutes on 2 cores for the CUDA build's 455 files); with --record, a clean run of
# a tree without uncommitted changes writes HEAD to .ci/tidy-clean. --since-clean: the files
# changed since the commit .ci/tidy-clean names, what tools/test.sh runs in CI; every file when
# that commit is not in this clone's history or .clang-tidy changed since. --build: the build
# directory whose compile_commands.json is used (default build/).
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "${MINIDL_ROOT}"

build_dir=build
mode=last-commit
since=
record=false
clean_record=.ci/tidy-clean
while (($# > 0)); do
  case $1 in
    --build) build_dir=$2; shift 2 ;;
    --all) mode=all; shift ;;
    --record) record=true; shift ;;
    --since) mode=since; since=$2; shift 2 ;;
    --since-clean) mode=since-clean; shift ;;
    *)
      echo "tidy.sh: unknown argument '$1'; expected --build DIR, --all [--record], --since REV or --since-clean" >&2
      exit 2
      ;;
  esac
done
if [[ ${record} == true && ${mode} != all ]]; then
  echo "tidy.sh: --record goes with --all (only a whole-tree run can say the tree is clean)" >&2
  exit 2
fi

# --since-clean: the tree was clean at the recorded commit, so checking what changed since keeps
# it clean. The record's first line that is not a comment is the commit.
if [[ ${mode} == since-clean ]]; then
  since=$(grep -v '^#' "${clean_record}" | head -n 1 || true)
  if [[ -z ${since} ]] || ! git cat-file -e "${since}^{commit}" 2>/dev/null; then
    echo "tidy.sh: ${clean_record} names no commit of this clone ('${since}'); checking every file"
    mode=all
  elif ! git diff --quiet "${since}" -- .clang-tidy; then
    echo "tidy.sh: .clang-tidy changed since ${since}, the last clean commit; checking every file"
    mode=all
  else
    echo "tidy.sh: the tree was clean at ${since} (${clean_record}); checking the files changed since"
    mode=since
  fi
fi

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
# The test programs' sources compile with a precompiled header of GCC's (-include
# .../cmake_pch.hxx beside its .gch; tests/CMakeLists.txt), which clang cannot read: clang-tidy
# gets the build's commands without it, so each source is checked with the includes it names.
database=$(mktemp -d)
trap 'rm -rf "${database}"' EXIT
python3 - "${build_dir}/compile_commands.json" "${database}/compile_commands.json" <<'EOF'
import json, re, sys
entries = json.load(open(sys.argv[1]))
for entry in entries:
    entry["command"] = re.sub(r" -Winvalid-pch| -include \S+/cmake_pch\.hxx", "", entry["command"])
json.dump(entries, open(sys.argv[2], "w"), indent=1)
EOF
# One clang-tidy per file, MINIDL_JOBS at a time; a finding fails its file.
printf '%s\n' "${checked[@]}" |
  xargs -P "${MINIDL_JOBS}" -I{} clang-tidy --quiet -p "${database}" {}

if [[ ${record} == true ]]; then
  if git diff --quiet HEAD && [[ -z $(git ls-files --others --exclude-standard -- '*.cpp' '*.h') ]]; then
    {
      echo "# The last commit at which tools/tidy.sh --all found nothing (written by --all --record);"
      echo "# CI's tools/tidy.sh --since-clean checks the .cpp files changed since."
      git rev-parse HEAD
    } >"${clean_record}"
    echo "tidy.sh: clean; recorded $(git rev-parse --short HEAD) in ${clean_record}"
  else
    echo "tidy.sh: clean, but the tree has uncommitted changes; ${clean_record} is left as it was" >&2
  fi
fi
