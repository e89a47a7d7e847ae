# shellcheck shell=bash
# Sourced, not run: the environment that makes the GPU kit's Open MPI run from where its archive
# was unpacked. pack.sh puts Debian's Open MPI 4.1 and PMIx 4.2 in the kit with dpkg -x, as built
# for /usr; they find their plugins, help texts and configuration through the variables below
# instead (Open MPI's and PMIx's installdirs "env" components):
#
#   source tools/gpu/kit_mpi_env.sh
#   kit_mpi_env ROOT      ROOT: the unpacked deps.tar.xz's root/ (usr/ and etc/ in it)
#
# kit_mpi_env returns 1 and changes nothing when ROOT holds no mpirun (a kit packed before Open
# MPI was in it). tools/gpu/run.sh calls it for every stage; check_kit.sh for its configure.
#   OPAL_PREFIX       Open MPI's prefix; its libdir, plugin dir (pkglibdir) and help texts
#                     (datadir) are configured relative to it
#   OPAL_SYSCONFDIR   /etc/openmpi, not under the prefix: openmpi-mca-params.conf (Debian's turns
#                     off the UCX, libfabric and verbs transports, which the kit leaves out)
#   PMIX_PREFIX, PMIX_DATAROOTDIR, PMIX_DATADIR, PMIX_LIBDIR
#                     PMIx's; Debian configured its directories as absolute paths, so the prefix
#                     alone would leave its plugins and help texts at /usr/lib/.../pmix2
#   PATH              mpirun, mpiexec, mpicxx (FindMPI's wrapper), orted
#   LD_LIBRARY_PATH   libmpi, libopen-pal, libopen-rte (openmpi/lib and the multiarch folder),
#                     libpmix, hwloc, libevent
kit_mpi_env() {
  local root=${1:?kit_mpi_env ROOT}
  [[ -x ${root}/usr/bin/mpirun && -d ${root}/usr/lib/x86_64-linux-gnu/openmpi/lib ]] || return 1
  root=$(cd "${root}" && pwd) # absolute: the wrapper's -I and -L paths are made from it
  local usr=${root}/usr
  local multiarch=${usr}/lib/x86_64-linux-gnu
  export OPAL_PREFIX=${usr}
  export OPAL_SYSCONFDIR=${root}/etc/openmpi
  export PMIX_PREFIX=${multiarch}/pmix2
  export PMIX_DATAROOTDIR=${multiarch}/pmix2/share
  export PMIX_DATADIR=${multiarch}/pmix2/share
  export PMIX_LIBDIR=${multiarch}/pmix2/lib
  export PATH=${usr}/bin:${PATH}
  local libraries=${multiarch}/openmpi/lib:${multiarch}/pmix2/lib:${multiarch}
  export LD_LIBRARY_PATH=${libraries}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}
}
