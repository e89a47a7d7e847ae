#!/usr/bin/env bash
# Two hosts, for real, on one machine (label mpi): two network namespaces joined by a veth pair,
# 10.213.0.1 and 10.213.0.2, each with its own hostname, and mpirun started in the first with the
# host list "10.213.0.1:2,10.213.0.2:2" and netns_launch_agent.sh as its ssh. Open MPI's
# out-of-band channel and its TCP BTL are held to the veth subnet and the shared-memory BTL is
# used within a host only, so the ranks of the two hosts talk TCP over the veth pair and nothing
# of the job leaves the test's namespaces. train_lenet trains with 4 ranks on a small
# Fashion-MNIST-shaped data set the script writes.
#
#   run_multihost_case.sh MPIRUN TRAIN_LENET SCRATCH CASE
#
# CASE:
#   same_checkpoint: the 2-host run's final checkpoint is byte-identical to a 4-rank single-host
#     run's (the same training, the same reductions in the same order);
#   host_killed: SIGKILL to the second host's ranks mid-training ends the whole job, non-zero,
#     within 30 s, with mpirun naming a rank of that host and the survivors saying why they end;
#   host_lost: the second host drops off the network mid-training (its veth end goes down): the
#     job ends within 30 s, mpirun naming the lost node, and nothing is left on either host;
#   host_unreachable: a host list with a third address that no host answers is a clear error
#     within 30 s, not a hang.
# Every case also checks that no process of the job is left in either namespace. The namespaces
# (named after this script's pid) are removed at the end, also when a check fails.
#
# Exit status 77 (a CTest skip) with the reason when namespaces cannot be made (not root, no
# ip/unshare, a container without CAP_SYS_ADMIN / CAP_NET_ADMIN).
set -uo pipefail
mpirun=$1 trainer=$2 scratch=$3 case=$4

subnet=10.213.0.0/24
address=(10.213.0.1 10.213.0.2)
namespace=("mdl$$h0" "mdl$$h1")
unreachable=10.213.0.3
here=$(cd "$(dirname "$0")" && pwd)

fail() {
  echo "FAILED (${case}): $*" >&2
  exit 1
}
skip() {
  echo "SKIPPED: $*"
  exit 77
}
seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# ---- the two hosts ----
# Whatever still runs in a namespace is the test's own (the namespaces are new); the teardown
# ends it by pid before it removes the namespaces (which removes the veth pair with them).
teardown() {
  for ns in "${namespace[@]}"; do
    if ip netns list | grep -qw "${ns}"; then
      for pid in $(ip netns pids "${ns}" 2>/dev/null); do kill -KILL "${pid}" 2>/dev/null; done
      ip netns del "${ns}" 2>/dev/null
    fi
  done
  # A veth pair that failed to move into the namespaces is still here.
  ip link del "mdl$$a" 2>/dev/null || true
}
trap teardown EXIT
# Bash runs the EXIT trap on a signal only when the signal has a trap of its own.
trap 'exit 143' TERM
trap 'exit 130' INT

[[ $(id -u) == 0 ]] || skip "network namespaces need root (this is uid $(id -u))"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v unshare >/dev/null || skip "no unshare command (util-linux)"
why=$(ip netns add "${namespace[0]}" 2>&1) || skip "cannot make a network namespace: ${why}"
ip netns add "${namespace[1]}" || fail "cannot make the second namespace"
# The namespaces of an earlier run that was killed outright (SIGKILL: no teardown), whose
# script is gone: remove them.
for stale in $(ip netns list | grep -oE '^mdl[0-9]+h[01]'); do
  pid=${stale#mdl}
  pid=${pid%h[01]}
  if ! kill -0 "${pid}" 2>/dev/null; then
    for leftover in $(ip netns pids "${stale}" 2>/dev/null); do kill -KILL "${leftover}"; done
    ip netns del "${stale}" 2>/dev/null
  fi
done
why=$(ip netns exec "${namespace[0]}" unshare --uts true 2>&1) ||
  skip "cannot make a UTS namespace inside a network namespace: ${why}"
ip link add "mdl$$a" type veth peer name "mdl$$b" || fail "cannot make a veth pair"
ip link set "mdl$$a" netns "${namespace[0]}" && ip link set "mdl$$b" netns "${namespace[1]}" ||
  fail "cannot move the veth pair into the namespaces"
veth=("mdl$$a" "mdl$$b")
for i in 0 1; do
  ip -n "${namespace[i]}" address add "${address[i]}/24" dev "${veth[i]}" &&
    ip -n "${namespace[i]}" link set lo up &&
    ip -n "${namespace[i]}" link set "${veth[i]}" up || fail "cannot configure ${namespace[i]}"
done
echo "hosts: ${namespace[0]} (${address[0]}), ${namespace[1]} (${address[1]})"

# ---- the data: Fashion-MNIST's IDX files, 512 training and 128 test images of noise ----
rm -rf "${scratch}" && mkdir -p "${scratch}/data" && cd "${scratch}" || fail "no scratch folder"
# One IDX file: the magic number, the sizes (big-endian), then bytes from a seeded awk (labels
# below 10).
write_idx() {
  local file=$1 magic=$2 count=$3 modulo=$4 seed=$5
  shift 5
  local header=(0 0 8 "${magic}") bytes=${count} size
  for size in "${count}" "$@"; do
    header+=($((size >> 24 & 255)) $((size >> 16 & 255)) $((size >> 8 & 255)) $((size & 255)))
  done
  for size in "$@"; do bytes=$((bytes * size)); done
  {
    printf "$(printf '\\x%02x' "${header[@]}")"
    LC_ALL=C awk -v n="${bytes}" -v m="${modulo}" -v seed="${seed}" \
      'BEGIN { srand(seed); for (i = 0; i < n; ++i) printf "%c", int(rand() * m) }'
  } >"data/${file}"
}
write_idx train-images-idx3-ubyte 3 512 256 1 28 28
write_idx train-labels-idx1-ubyte 1 512 10 2
write_idx t10k-images-idx3-ubyte 3 128 256 3 28 28
write_idx t10k-labels-idx1-ubyte 1 128 10 4

# ---- the job ----
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One thread per rank, and whatever selects OpenBLAS's kernels, on every host: a rank with
# another thread count or another GEMM kernel sums in another order, and its bits differ.
export OMP_NUM_THREADS=1 MINIDL_COLLECTIVE_TIMEOUT_S=${MINIDL_COLLECTIVE_TIMEOUT_S:-10}
forward=(-x OMP_NUM_THREADS -x MINIDL_COLLECTIVE_TIMEOUT_S)
for name in $(compgen -e | grep '^OPENBLAS_'); do forward+=(-x "${name}"); done
export MINIDL_NETNS_HOSTS="${address[0]}=${namespace[0]} ${address[1]}=${namespace[1]}"
# The keepalive settings: mpirun notices a daemon whose host has gone (no RST, no FIN: a cut
# cable, a machine switched off) after 5 + 3 x 2 s of silence and ends the job; with Open MPI's
# defaults (300 s before the first probe) mpirun hung past the test's 2-minute limit, and the
# lost host's daemon stayed behind.
network=(--mca plm_rsh_agent "${here}/netns_launch_agent.sh" --mca plm_rsh_no_tree_spawn 1
         --mca oob_tcp_if_include "${subnet}" --mca btl self,vader,tcp
         --mca btl_tcp_if_include "${subnet}" --mca btl_vader_single_copy_mechanism none
         --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2
         --mca oob_tcp_keepalive_probes 3)
training=(--data-dir "${scratch}/data" --dataset fashion-mnist --device cpu --batch-size 16
          --workers 0 --no-progress)
tag="minidl-multihost-$$"

# mpirun on the first host (with that host's name), NP ranks, the host list over both (plus
# EXTRA hosts, 2 slots each):
#   on_two_hosts LOG NP EXTRA_HOSTS MPIRUN_AND_PROGRAM_ARGUMENTS...
on_two_hosts() {
  local log=$1 np=$2 extra=$3
  shift 3
  # The outer timeout only stops a hang of the test itself (a failure anyway).
  timeout -k 5 120 ip netns exec "${namespace[0]}" unshare --uts \
    sh -c 'echo "$0" >/proc/sys/kernel/hostname && exec "$@"' "${namespace[0]}" \
    "${mpirun}" --host "${address[0]}:2,${address[1]}:2${extra}" -np "${np}" "${network[@]}" \
    "${forward[@]}" "$@" >"${log}" 2>&1
}

# No process of the job in either namespace, and none with the tag anywhere. The daemons exit
# on mpirun's word when it ends: they get 5 s for that.
check_nothing_left() {
  local ns left
  for _ in $(seq 50); do
    [[ -z $(ip netns pids "${namespace[0]}")$(ip netns pids "${namespace[1]}") ]] && break
    sleep 0.1
  done
  for ns in "${namespace[@]}"; do
    left=$(ip netns pids "${ns}" | tr '\n' ' ')
    [[ -z ${left} ]] || { ps -o pid,args -p "${left// /,}" >&2; fail "processes left in ${ns}"; }
  done
  left=$(pgrep -f -- "${tag}" || true)
  [[ -z ${left} ]] || fail "processes left behind: ${left}"
}

# A fault case's verdict on mpirun: it failed (not 0), was not stopped by the timeout (124), ended
# within 30 s of the fault, and left nothing behind.
#   expect_failed_fast LOG STATUS SECONDS_AFTER_THE_FAULT
expect_failed_fast() {
  local log=$1 status=$2 after=$3
  [[ ${status} != 0 ]] || { show "${log}"; fail "mpirun exited 0"; }
  [[ ${status} != 124 ]] || { show "${log}"; fail "the job hung (stopped by the timeout)"; }
  awk -v t="${after}" 'BEGIN { exit !(t < 30) }' || fail "the job took ${after} s to end"
  check_nothing_left
}

show() {
  echo "---- $1 ----"
  cat "$1"
  echo "----"
}

case ${case} in
same_checkpoint)
  run=(--epochs 2 --checkpoint-dir)
  # The single-host run: 4 ranks in this (the root) namespace.
  "${mpirun}" --oversubscribe -np 4 --mca btl self,vader,tcp \
    --mca btl_vader_single_copy_mechanism none "${forward[@]}" \
    "${trainer}" "${training[@]}" "${run[@]}" "${scratch}/one_host" >one_host.log 2>&1 ||
    { show one_host.log; fail "the single-host run failed"; }
  on_two_hosts two_hosts.log 4 "" "${trainer}" "${training[@]}" "${run[@]}" "${scratch}/two_hosts" ||
    { show two_hosts.log; fail "the two-host run failed"; }
  check_nothing_left
  # The placement line: ranks 0, 1 on the first host, 2, 3 on the second, each with its name.
  grep -qE "rank 1: ${namespace[0]} pid [0-9]+ local rank 1 .*rank 2: ${namespace[1]} pid [0-9]+ local rank 0" \
    two_hosts.log || { show two_hosts.log; fail "the ranks are not 2 on each host"; }
  # The ranks of the two hosts talked over the veth pair: 16 all-reduces of LeNet's gradients
  # (about 0.25 MB of f32) move megabytes through it.
  moved=$(ip -n "${namespace[1]}" -s -j link show "${veth[1]}" |
    grep -oE '"rx":\{"bytes":[0-9]+' | grep -oE '[0-9]+$')
  echo "${moved:-0} bytes arrived at ${namespace[1]} over the veth pair"
  [[ ${moved:-0} -gt 2000000 ]] || fail "only ${moved:-0} bytes went over the veth pair"
  final=checkpoint-000000016.safetensors  # 2 epochs of 512 / (16 x 4) steps
  [[ -f one_host/${final} && -f two_hosts/${final} ]] ||
    fail "no ${final}: $(ls one_host two_hosts)"
  cmp one_host/${final} two_hosts/${final} || fail "the final checkpoints differ"
  echo "the 2-host run's ${final} is byte-identical to the single-host run's"
  ;;
host_killed)
  on_two_hosts killed.log 4 "" "${trainer}" "${training[@]}" --epochs 1000 \
    --checkpoint-dir "${scratch}/killed" --checkpoint-every 50 --metrics "${scratch}/${tag}.jsonl" &
  job=$!
  # Wait for training (an epoch line), then kill the second host's ranks, not its daemon.
  for _ in $(seq 600); do grep -q "^epoch 1/" killed.log 2>/dev/null && break; sleep 0.1; done
  grep -q "^epoch 1/" killed.log || { kill -KILL "${job}"; show killed.log; fail "no training"; }
  ranks=()
  for pid in $(ip netns pids "${namespace[1]}"); do
    [[ $(cat "/proc/${pid}/comm" 2>/dev/null) == train_lenet ]] && ranks+=("${pid}")
  done
  [[ ${#ranks[@]} == 2 ]] || fail "expected 2 ranks on ${namespace[1]}, found: ${ranks[*]}"
  killed_at=$(date +%s.%N)
  kill -KILL "${ranks[@]}"
  wait "${job}"
  status=$?
  end=$(date +%s.%N)
  after=$(seconds_between "${killed_at}" "${end}")
  echo "mpirun exit status ${status}, ${after} s after the kill"
  expect_failed_fast killed.log "${status}" "${after}"
  grep -qE "process rank [23] with PID [0-9]+ on node ${address[1]} exited on signal 9" \
    killed.log || { show killed.log; fail "mpirun did not name a rank of ${address[1]}"; }
  # Each survivor says why it ends: mpirun's SIGTERM, or (when its collective saw the broken
  # connection first) the error it logs before MPI_Abort.
  for r in 0 1; do
    grep -qE "\[rank ${r}\] (minidl: terminated by SIGTERM|\[(error|critical)\])" killed.log ||
      { show killed.log; fail "rank ${r} did not report its end"; }
  done
  grep -E "process rank|terminated by|\[(error|critical)\]" killed.log
  ;;
host_lost)
  # The second host drops off the network mid-training (its end of the veth pair goes down):
  # the first host's ranks time out in their collective (MINIDL_COLLECTIVE_TIMEOUT_S, 10 s) and
  # mpirun loses its daemon there; the job must end, naming that node, within 30 s, and the lost
  # host's daemon and ranks must end too (they lose mpirun the same way).
  on_two_hosts lost.log 4 "" "${trainer}" "${training[@]}" --epochs 1000 \
    --checkpoint-dir "${scratch}/lost" --checkpoint-every 50 --metrics "${scratch}/${tag}.jsonl" &
  job=$!
  for _ in $(seq 600); do grep -q "^epoch 1/" lost.log 2>/dev/null && break; sleep 0.1; done
  grep -q "^epoch 1/" lost.log || { kill -KILL "${job}"; show lost.log; fail "no training"; }
  cut_at=$(date +%s.%N)
  ip -n "${namespace[1]}" link set "${veth[1]}" down || fail "cannot take ${veth[1]} down"
  wait "${job}"
  status=$?
  end=$(date +%s.%N)
  after=$(seconds_between "${cut_at}" "${end}")
  echo "mpirun exit status ${status}, ${after} s after the cut"
  expect_failed_fast lost.log "${status}" "${after}"
  grep -q "ORTE has lost communication with a remote daemon" lost.log &&
    grep -qE "Remote daemon: .* on node ${address[1]}" lost.log ||
    { show lost.log; fail "mpirun did not say that it lost ${address[1]}"; }
  grep -E "lost communication|Remote daemon|timed out after" lost.log | cut -c1-200
  ;;
host_unreachable)
  start=$(date +%s.%N)
  # 6 ranks: 2 on each of the 3 hosts, so that mpirun must start a daemon on the third.
  on_two_hosts unreachable.log 6 ",${unreachable}:2" "${trainer}" \
    "${training[@]}" --epochs 1 --checkpoint-dir "" --metrics "${scratch}/${tag}.jsonl"
  status=$?
  end=$(date +%s.%N)
  after=$(seconds_between "${start}" "${end}")
  echo "mpirun exit status ${status} after ${after} s"
  expect_failed_fast unreachable.log "${status}" "${after}"
  grep -q "connect to host ${unreachable} port 22: No route to host" unreachable.log &&
    grep -q "ORTE was unable to reliably start one or more daemons" unreachable.log ||
    { show unreachable.log; fail "no clear error naming ${unreachable}"; }
  grep -E "No route|unable to reliably start" unreachable.log
  ;;
*) fail "unknown case ${case}" ;;
esac
echo "PASSED (${case})"
