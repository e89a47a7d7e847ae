#!/usr/bin/env bash
# mpi.zero_resume_world_sizes: train_lenet --zero 1 on 4 ranks for an epoch, resumed unsharded
# (--zero 0) on 1 rank for the next, resumed --zero 1 on 2 ranks for the last (--max-steps stops
# the first two, so that every run has the 3-epoch run's schedule). The same chain with --zero 0
# throughout must write the same checkpoint, byte for byte: sharding changes no number, and a
# checkpoint holds the whole state whatever the world size that wrote or reads it.
# --zero 1 is ZeRO-1's reduce-scatter form (distributed/zero_redundancy_optimizer.h), whose
# averaged gradients are the sums an all-reduce makes (the same bits here, with Open MPI, at 4
# ranks too), but whose clipping takes the global norm from the ranks' slices, adding the squares
# in another order. So the byte-for-byte chains run without clipping, and a second pair of chains
# with --clip-grad-norm 1 must agree within 1e-4 relative (9.6e-6 measured, 2026-11-27).
# The global batch is 32 throughout (8 x 4, 32 x 1, 16 x 2), as resuming on another number of
# ranks asks. For information, the script prints how far the chain's weights are from a straight
# 3-epoch run on 2 ranks: each world size averages the ranks' shares of a batch in another order,
# so the last bits differ, and AdamW's normalised steps carry such differences along (about 1e-4
# relative after 96 steps); that is data parallelism's arithmetic, the same with or without ZeRO.
#   zero_resume_world_sizes.sh <mpirun> <train_lenet> <work dir>
# Exits 77 (CTest's skip) when Fashion-MNIST is not installed.
set -euo pipefail
mpirun=$1 train_lenet=$2 work=$3
data=${MINIDL_DATA:-/usr/share/datasets}/fashion-mnist
if [[ ! -d $data ]]; then
  echo "SKIP: no Fashion-MNIST in $data (the Debian package dataset-fashion-mnist)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
common=(--limit-train 1024 --limit-test 256 --optimizer adamw --lr 2e-3
        --device cpu --workers 0 --no-progress --log-level warn)
run() {  # run <ranks> <per-rank batch> <zero> <max steps> <clip> <checkpoint dir> [--resume auto]
  local ranks=$1 batch=$2 zero=$3 steps=$4 clip=$5 dir=$6
  shift 6
  "$mpirun" --oversubscribe -np "$ranks" "$train_lenet" "${common[@]}" --batch-size "$batch" \
    --zero "$zero" --clip-grad-norm "$clip" --epochs 3 --max-steps "$steps" \
    --checkpoint-dir "$dir" "$@" >>out.txt 2>&1 ||
    { cat out.txt; echo "FAIL: $ranks ranks, --zero $zero, --max-steps $steps"; exit 1; }
}
chain() {  # chain <zero on 4 and 2 ranks> <clip> <checkpoint dir>: 4 ranks -> 1 -> 2
  run 4 8 "$1" 32 "$2" "$3"  # 32 steps an epoch
  run 1 32 0 64 "$2" "$3" --resume auto
  run 2 16 "$1" 96 "$2" "$3" --resume auto
}
chain 1 0 chain
chain 0 0 unsharded
cmp chain/checkpoint-000000096.safetensors unsharded/checkpoint-000000096.safetensors ||
  { echo "FAIL: the chain with --zero 1 wrote another checkpoint than the chain with --zero 0"; exit 1; }
chain 1 1 clipped_chain
chain 0 1 clipped_unsharded
run 2 16 1 96 1 straight

# The tensors of two checkpoints (safetensors: a u64 header length, a JSON header, the data):
# prints how many float32 tensors whose names start with <prefix> they hold, and their largest
# difference, relative (absolute below 1e-2).
largest_difference() {  # largest_difference <prefix> <checkpoint> <reference checkpoint>
  python3 - "$@" <<'EOF'
import array, json, struct, sys

def tensors(path, prefix):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(length))
        data = f.read()
    found = {}
    for name, entry in header.items():
        if name == "__metadata__" or not name.startswith(prefix) or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        found[name] = array.array("f", data[begin:end])
    return found

prefix, path, reference_path = sys.argv[1:4]
got, reference = tensors(path, prefix), tensors(reference_path, prefix)
assert reference and reference.keys() == got.keys(), "the checkpoints hold other tensors"
worst = 0.0
for name, expected in reference.items():
    for a, b in zip(got[name], expected):
        worst = max(worst, abs(a - b) / max(abs(b), 1e-2))
print(f"{len(reference)} {worst:.3g}")
EOF
}
read -r count clipped < <(largest_difference "" clipped_chain/checkpoint-*96.safetensors \
                                               clipped_unsharded/checkpoint-*96.safetensors)
python3 -c "import sys; sys.exit(0 if float('$clipped') <= 1e-4 else 1)" ||
  { echo "FAIL: with clipping, the chain with --zero 1 is $clipped (relative) from --zero 0's"; exit 1; }
echo "PASS: --zero 1 on 4 ranks -> --zero 0 on 1 -> --zero 1 on 2 wrote the checkpoint of" \
     "--zero 0; with clipping, its $count tensors within $clipped relative of --zero 0's"
read -r count straight < <(largest_difference model. straight/checkpoint-*96.safetensors \
                                              clipped_chain/checkpoint-*96.safetensors)
echo "for information: $count tensors, the chain's largest difference from a straight run on 2" \
     "ranks $straight (relative; absolute below 1e-2)"
