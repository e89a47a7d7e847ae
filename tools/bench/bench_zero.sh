#!/usr/bin/env bash
# ZeRO-1 against DDP, side by side: train_lenet on N CPU ranks with --zero 0 (DDP: gradients
# all-reduced, every rank steps every parameter) and --zero 1 (ZeRO-1's reduce-scatter form:
# gradients reduce-scattered, each rank steps its 1/N slice, parameters all-gathered;
# distributed/zero_redundancy_optimizer.h), interleaved (0, 1, 0, 1, ...) so that both see the
# same machine load, and the median of each.
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
# Prints one JSON line per setting: {"zero": 0|1, "form": "ddp"|"reduce-scatter", "model",
# "ranks", "batch", "bind_to", "step_ms": [each run], "median_step_ms", "min_step_ms"}, then one
# line {"ratio": ZeRO-1's median step over DDP's, "min_ratio": the same of the fastest runs} (on a
# machine that others load, the fastest run of each is the one least disturbed). Needs Fashion-MNIST (MINIDL_DATA or
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
python3 - "$ranks" "$batch" "$bind" "${times[0]}" "${times[1]}" <<'EOF'
import json, statistics, sys
ranks, batch, bind, *settings = sys.argv[1:]
medians, minima = [], []
for zero, runs in enumerate(settings):
    runs = [float(t) for t in runs.split()]
    medians.append(statistics.median(runs))
    minima.append(min(runs))
    print(json.dumps({"zero": zero, "form": ["ddp", "reduce-scatter"][zero], "model": "lenet",
                      "ranks": int(ranks), "batch": int(batch), "bind_to": bind, "step_ms": runs,
                      "median_step_ms": medians[-1], "min_step_ms": minima[-1]}))
print(json.dumps({"ratio": round(medians[1] / medians[0], 3),
                  "min_ratio": round(minima[1] / minima[0], 3)}))
EOF
