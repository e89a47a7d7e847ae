#!/usr/bin/env bash
# ZeRO-1 against DDP, side by side: train_lenet on N CPU ranks with --zero 0 and --zero 1,
# interleaved (0, 1, 0, 1, ...) so that both see the same machine load, and the median of each.
# The step time is the rank's batch over the trainer's images per second per rank (its
# "train_images_per_sec" is over every rank: global batch / step time).
#
#   tools/bench/bench_zero.sh <folder of train_lenet> [repeats] [ranks] [batch per rank]
#                             [steps per run]
#   tools/bench/bench_zero.sh build-cpu/tools 7 2 32 300
#
# BIND_TO (default none) is mpirun's --bind-to: Open MPI binds each of 2 ranks to a core by
# default; under other load a bound step scatters widely (see docs/benchmarks.md), so the
# default here leaves the ranks unbound, and BIND_TO=core measures the bound case.
# Prints one JSON line per setting: {"zero": 0|1, "model", "ranks", "batch", "bind_to",
# "step_ms": [each run], "median_step_ms"}. Needs Fashion-MNIST (MINIDL_DATA or
# /usr/share/datasets).
set -euo pipefail
tools=$1 repeats=${2:-7} ranks=${3:-2} batch=${4:-32} steps=${5:-300}
bind=${BIND_TO:-none}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_vader_single_copy_mechanism=none
declare -A times=([0]="" [1]="")
for ((run = 0; run < repeats; ++run)); do
  for zero in 0 1; do
    line=$(mpirun --bind-to "$bind" --oversubscribe -np "$ranks" "$tools/train_lenet" --device cpu \
      --optimizer adamw --lr 1e-3 --batch-size "$batch" --epochs 1 \
      --limit-train $((batch * ranks * steps)) --limit-test 100 --workers 0 --no-progress \
      --log-level warn --checkpoint-dir "" --zero "$zero" | tail -n 1)
    ms=$(python3 -c "import json,sys; s=json.loads(sys.argv[1]); \
print(round(1000 * $batch * $ranks / s['train_images_per_sec'], 2))" "$line")
    times[$zero]+="$ms "
  done
done
for zero in 0 1; do
  python3 - "$zero" "$ranks" "$batch" "$bind" ${times[$zero]} <<'EOF'
import json, statistics, sys
zero, ranks, batch, bind, *runs = sys.argv[1:]
runs = [float(t) for t in runs]
print(json.dumps({"zero": int(zero), "model": "lenet", "ranks": int(ranks), "batch": int(batch),
                  "bind_to": bind, "step_ms": runs, "median_step_ms": statistics.median(runs)}))
EOF
done
