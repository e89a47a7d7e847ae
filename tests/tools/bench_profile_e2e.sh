#!/usr/bin/env bash
# e2e.bench_profile: bench --profile (CTest runs it from tools/CMakeLists.txt).
#   bench_profile_e2e.sh <bench>
# Everywhere: --profile on the CPU fails, saying it needs a GPU. With a GPU: LeNet's profile,
# with the step replayed from a CUDA graph and eager, has every field with sane values (kernels
# each step, busy <= wall, kernel time where there are kernels). Without a GPU the second part
# reports itself skipped (exit 77).
set -uo pipefail
bench=$1
scratch=$(mktemp -d) && trap 'rm -rf "$scratch"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

"$bench" --device cpu --profile --model lenet --steps 1 >"$scratch/out" 2>"$scratch/err" &&
  fail "bench --device cpu --profile succeeded; expected an error"
grep -qF -- "--profile needs a GPU (--device cuda)" "$scratch/err" ||
  { cat "$scratch/err" >&2; fail "bench --device cpu --profile: the error does not name the GPU"; }
echo "ok: bench --device cpu --profile: $(cat "$scratch/err")"

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
