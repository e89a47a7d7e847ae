#!/usr/bin/env bash
# The launch agent of the multi-host test (run_multihost_case.sh): it stands in for ssh as Open
# MPI's plm_rsh_agent, with network namespaces as the hosts. mpirun calls it as it calls ssh:
#
#   netns_launch_agent.sh HOST COMMAND...
#
# HOST is an address of the host list; MINIDL_NETNS_HOSTS ("ADDRESS=NAMESPACE ...", set by the
# test) says which namespace holds it. The command runs there in a UTS namespace of its own whose
# hostname is the namespace's name (each "host" has its own name, as real ones do: Open MPI names
# its shared-memory files after the host, and two "hosts" of one name crash in the vader BTL), with a
# clean environment as after an ssh login: PATH and LD_LIBRARY_PATH only (a login shell on
# machines with the same installation gives the same). Whatever else the ranks need mpirun must
# forward (-x), as on real machines.
#
# An address that no namespace holds is a host that cannot be reached: the agent fails the way ssh
# does (its message, exit status 255).
set -uo pipefail
# ssh takes options before the host; Open MPI passes none to an agent it does not know, but skip
# any to be safe.
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
host=${1:?"netns_launch_agent.sh: expected HOST COMMAND..."}
shift
namespace=""
for pair in ${MINIDL_NETNS_HOSTS:-}; do
  [[ ${pair%%=*} == "${host}" ]] && namespace=${pair#*=}
done
if [[ -z ${namespace} ]]; then
  echo "ssh: connect to host ${host} port 22: No route to host" >&2
  exit 255
fi
# ssh hands the remote shell the command as one string: so does this.
exec ip netns exec "${namespace}" unshare --uts \
  env -i PATH="${PATH}" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" HOME="${HOME:-/}" \
  /bin/sh -c "echo '${namespace}' >/proc/sys/kernel/hostname && $*"
