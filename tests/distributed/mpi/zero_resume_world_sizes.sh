#!/usr/bin/env bash
# mpi.zero_resume_world_sizes: train_lenet --zero 1 on 4 ranks for an epoch, resumed unsharded
# (--zero 0) on 1 rank for the next, resumed --zero 1 on 2 ranks for the last (--max-steps stops
# the first two, so that every run has the 3-epoch run's schedule). The same chain with --zero 0
# throughout must write the same checkpoint, byte for byte: sharding changes no number, and a
# checkpoint holds the whole state whatever the world size that wrote or reads it.
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
common=(--limit-train 1024 --limit-test 256 --optimizer adamw --lr 2e-3 --clip-grad-norm 1
        --device cpu --workers 0 --no-progress --log-level warn)
run() {  # run <ranks> <per-rank batch> <zero> <max steps> <checkpoint dir> [--resume auto]
  local ranks=$1 batch=$2 zero=$3 steps=$4 dir=$5
  shift 5
  "$mpirun" --oversubscribe -np "$ranks" "$train_lenet" "${common[@]}" --batch-size "$batch" \
    --zero "$zero" --epochs 3 --max-steps "$steps" --checkpoint-dir "$dir" "$@" >>out.txt 2>&1 ||
    { cat out.txt; echo "FAIL: $ranks ranks, --zero $zero, --max-steps $steps"; exit 1; }
}
run 4 8 1 32 chain  # 32 steps an epoch
run 1 32 0 64 chain --resume auto
run 2 16 1 96 chain --resume auto
run 4 8 0 32 unsharded
run 1 32 0 64 unsharded --resume auto
run 2 16 0 96 unsharded --resume auto
cmp chain/checkpoint-000000096.safetensors unsharded/checkpoint-000000096.safetensors ||
  { echo "FAIL: the chain with --zero 1 wrote another checkpoint than the chain with --zero 0"; exit 1; }
echo "PASS: --zero 1 on 4 ranks -> --zero 0 on 1 -> --zero 1 on 2 wrote the checkpoint of --zero 0"
run 2 16 1 96 straight

# The last checkpoints' model tensors (safetensors: a u64 header length, a JSON header, the data).
python3 - straight/checkpoint-*96.safetensors chain/checkpoint-*96.safetensors <<'EOF'
import array, json, struct, sys

def model_tensors(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or not name.startswith("model.") or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = array.array("f", data[begin:end])
    return tensors

straight, chain = model_tensors(sys.argv[1]), model_tensors(sys.argv[2])
assert straight and straight.keys() == chain.keys(), "the checkpoints hold other tensors"
worst = 0.0
for name, expected in straight.items():
    for a, b in zip(chain[name], expected):
        worst = max(worst, abs(a - b) / max(abs(b), 1e-2))
print(f"for information: {len(straight)} tensors, the chain's largest difference from a straight "
      f"run on 2 ranks {worst:.3g} (relative; absolute below 1e-2)")
EOF
