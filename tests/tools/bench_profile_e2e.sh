#!/usr/bin/env bash
# e2e.bench_profile_cpu and e2e.bench_profile_cuda: bench --profile (CTest runs them from
# tools/CMakeLists.txt).
#   bench_profile_e2e.sh <bench> cpu|cuda
# cpu: LeNet's profile on the CPU has every field with sane values (the ops' self times
# within the wall time; the convolutions, the backward nodes and the optimizer's one step a step
# among the ops). cuda: LeNet's profile, with the step replayed from a CUDA graph and
# eager, has every field with sane values (kernels each step, busy <= wall, kernel time where
# there are kernels). cuda without a GPU reports itself skipped (exit 77).
set -uo pipefail
bench=$1
device=$2
scratch=$(mktemp -d) && trap 'rm -rf "$scratch"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ $device == cpu ]]; then
"$bench" --device cpu --profile --profile-steps 2 --model lenet --batch-size 32 --warmup 1 \
  --steps 1 >"$scratch/out" 2>"$scratch/err" ||
  { cat "$scratch/err" >&2; fail "bench --device cpu --profile failed"; }
python3 - "$scratch/out" <<'PYTHON' || fail "--device cpu: bad profile"
import json, sys
row = json.loads(open(sys.argv[1]).read().splitlines()[-1])
profile = row["profile"]
assert list(profile) == ["steps", "wall_ms_per_step", "op_ms_per_step", "ops", "events"], \
    list(profile)
assert profile["steps"] == 2, profile
assert 0 < profile["op_ms_per_step"] <= profile["wall_ms_per_step"], profile
top = profile["ops"]
assert len(top) >= 10 and all(set(op) == {"name", "ms_per_step", "calls_per_step"} for op in top)
assert [op["ms_per_step"] for op in top] == sorted((op["ms_per_step"] for op in top), reverse=True)
names = {op["name"]: op for op in top}
# LeNet's two convolutions, forward: on oneDNN or im2col, whichever this build has.
forward = sum(op["calls_per_step"] for name, op in names.items()
              if name.startswith("conv2d forward"))
assert forward == 2, names
assert names["Conv2dBackward"]["calls_per_step"] == 2, names
assert names["optimizer step"]["calls_per_step"] == 1, names
assert names["ReluBackward"]["calls_per_step"] == 4, names  # its derivative kernel is inside it
for event in profile["events"]:
    assert set(event) == {"name", "calls_per_step", "thread_ms_per_step"}, event
    assert event["calls_per_step"] > 0 and event["thread_ms_per_step"] >= 0, event
print("ok: --device cpu:", json.dumps(profile))
PYTHON
echo "PASS"
exit 0
fi

for graph in on off; do
  if ! "$bench" --device cuda --profile --profile-steps 3 --model lenet --batch-size 64 \
       --warmup 2 --steps 3 --cuda-graph $graph >"$scratch/out" 2>"$scratch/err"; then
    if grep -qF "no CUDA device is available" "$scratch/err"; then
      echo "SKIPPED: no GPU for the profile runs ($(cat "$scratch/err"))"
      exit 77
    fi
    cat "$scratch/err" >&2
    fail "bench --device cuda --profile --cuda-graph $graph failed"
  fi
  python3 - "$scratch/out" "$graph" <<'PYTHON' || fail "--cuda-graph $graph: bad profile"
import json, sys
row = json.loads(open(sys.argv[1]).read().splitlines()[-1])
profile = row["profile"]
keys = ["steps", "wall_ms_per_step", "kernels_per_step", "kernel_ms_per_step", "busy_ms_per_step",
        "gap_ms_per_step", "memcpy_ms_per_step", "top_kernels"]
assert list(profile) == keys, list(profile)
assert profile["steps"] == 3, profile
assert profile["kernels_per_step"] >= 10, profile  # LeNet's step is dozens of kernels
assert 0 < profile["kernel_ms_per_step"] and 0 < profile["busy_ms_per_step"], profile
assert profile["busy_ms_per_step"] <= profile["wall_ms_per_step"], profile
assert abs(profile["wall_ms_per_step"] - profile["busy_ms_per_step"]
           - profile["gap_ms_per_step"]) < 1e-9, profile
top = profile["top_kernels"]
assert 1 <= len(top) <= 10 and all(set(k) == {"name", "ms_per_step", "calls_per_step"} for k in top)
assert [k["ms_per_step"] for k in top] == sorted((k["ms_per_step"] for k in top), reverse=True)
print(f"ok: --cuda-graph {sys.argv[2]}:", json.dumps(profile))
PYTHON
done
echo "PASS"
