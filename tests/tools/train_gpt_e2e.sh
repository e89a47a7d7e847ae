#!/usr/bin/env bash
# End-to-end checks of train_gpt (CTest e2e.train_gpt.<case>):
#   train_gpt_e2e.sh <tools dir> <scratch dir> <case>
# cases: learns, resume_after_signal, errors, options, help, data_parallel (mpirun). Each prints what it checks and exits
# non-zero on the first failure. The data is a small text the script writes, made into token
# files by prepare_text_tokens (from the same tools dir); nothing is downloaded.
set -uo pipefail
tools=$1 scratch=$2 case=$3
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1

fail() { echo "FAIL: $*" >&2; exit 1; }
# The value of "$2" in the JSON object on the last line of file $1.
json_field() { tail -n 1 "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }
# Runs train_gpt expecting exit status $1, with stderr in err.txt and stdout in out.txt.
expect_status() {
  local want=$1; shift
  "$@" >out.txt 2>err.txt
  local got=$?
  [[ $got == "$want" ]] || { cat out.txt err.txt >&2; fail "$* exited $got, expected $want"; }
}
expect_stderr() { grep -qF -- "$1" err.txt || { cat err.txt >&2; fail "stderr lacks: $1"; }; }

# A small text with structure to learn: verses of a few words, over and over in varying order.
make_text_tokens() {
  python3 - <<'PYTHON'
import random
random.seed(0)
words = ["to", "be", "or", "not", "that", "is", "the", "question", "whether", "tis", "nobler",
         "in", "mind", "suffer", "slings", "and", "arrows", "of", "outrageous", "fortune"]
lines = [" ".join(random.choice(words) for _ in range(random.randint(4, 9))) for _ in range(4000)]
open("text.txt", "w").write("\n".join(lines) + "\n")
PYTHON
  expect_status 0 "$tools/prepare_text_tokens" --out data text.txt
  [[ -f data/train.bin && -f data/val.bin ]] || fail "prepare_text_tokens wrote no token files"
}

# A small model and run: seconds on a CPU.
model=(--n-layer 1 --n-head 2 --n-embd 32 --block-size 32 --batch-size 16 --warmup-steps 5
       --eval-batches 4 --workers 1)
small=(--data-dir data "${model[@]}")

case $case in
learns)
  make_text_tokens
  expect_status 0 "$tools/train_gpt" "${small[@]}" --max-steps 300 --eval-interval 100 --lr 3e-3 \
    --checkpoint-dir ckpt --metrics metrics.jsonl --no-progress --sample-tokens 40
  for key in model params steps val_loss val_accuracy train_loss tokens_per_sec wall_seconds \
             device precision world_size; do
    json_field out.txt "$key" >/dev/null || fail "the summary line lacks $key"
  done
  [[ $(json_field out.txt steps) == 300 ]] || fail "trained $(json_field out.txt steps) steps, expected 300"
  val_loss=$(json_field out.txt val_loss)
  echo "validation loss after 300 steps: $val_loss (ln 256 = 5.55)"
  # Uniform over the bytes is 5.55; the text's ~25 distinct characters alone give 3.2.
  python3 -c "import sys; sys.exit(0 if $val_loss < 2.2 else 1)" || fail "val_loss $val_loss >= 2.2"
  grep -q -- "---- sample ----" out.txt || fail "no sample printed"
  # An evaluation, metrics line and checkpoint every --eval-interval steps.
  [[ $(wc -l <metrics.jsonl) == 3 ]] || fail "metrics.jsonl should have 3 lines"
  grep -q '"tokens_per_sec":' metrics.jsonl || fail "metrics.jsonl lacks tokens_per_sec"
  [[ -f ckpt/checkpoint-000000300.safetensors ]] || fail "no checkpoint at step 300"
  # Resuming the finished run evaluates it and trains nothing.
  expect_status 0 "$tools/train_gpt" "${small[@]}" --max-steps 300 --eval-interval 100 --lr 3e-3 \
    --checkpoint-dir ckpt --resume auto --no-progress --sample-tokens 0
  [[ $(json_field out.txt val_loss) == "$val_loss" ]] || fail "the resumed evaluation differs"
  [[ $(json_field out.txt train_loss) == None ]] || fail "a finished run trained again"
  # Mixed precision trains too (bf16 autocast on the CPU).
  expect_status 0 "$tools/train_gpt" "${small[@]}" --max-steps 40 --eval-interval 20 --lr 3e-3 \
    --precision bf16 --checkpoint-dir bf16 --no-progress --sample-tokens 10
  [[ $(json_field out.txt precision) == bf16 ]] || fail "the bf16 run says $(json_field out.txt precision)"
  bf16_loss=$(json_field out.txt val_loss)
  python3 -c "import sys; sys.exit(0 if $bf16_loss < 5.0 else 1)" || fail "bf16 val_loss $bf16_loss"
  echo "PASS"
  ;;
resume_after_signal)
  make_text_tokens
  # Large enough that SIGINT arrives mid-run.
  run=("$tools/train_gpt" --data-dir data --n-layer 2 --n-head 2 --n-embd 64 --block-size 64
       --batch-size 16 --warmup-steps 5 --eval-batches 4 --workers 1 --max-steps 300
       --eval-interval 100 --log-every 5 --sample-tokens 0)
  expect_status 0 "${run[@]}" --checkpoint-dir straight --no-progress
  tail -n 1 out.txt >straight.json
  "${run[@]}" --checkpoint-dir stopped >stopped.out 2>stopped.err &
  pid=$!
  for _ in $(seq 600); do grep -q "step 30/" stopped.out 2>/dev/null && break; sleep 0.1; done
  kill -INT $pid
  wait $pid
  status=$?
  cat stopped.err >err.txt
  [[ $status == 130 ]] || { cat stopped.out stopped.err >&2; fail "SIGINT: exit $status, expected 130"; }
  expect_stderr "train_gpt: stopped by SIGINT after step"
  expect_stderr "continue with --resume auto"
  expect_status 0 "${run[@]}" --checkpoint-dir stopped --resume auto --no-progress
  for key in val_loss val_accuracy steps; do
    [[ $(json_field out.txt $key) == $(json_field straight.json $key) ]] ||
      fail "$key: resumed $(json_field out.txt $key), straight $(json_field straight.json $key)"
  done
  echo "stopped by SIGINT and resumed: the same validation loss as the straight run"
  echo "PASS"
  ;;
errors)
  make_text_tokens
  # A run that fails before it trains; each check adds --data-dir and what it is about.
  trainer=("$tools/train_gpt" "${model[@]}" --max-steps 10 --eval-interval 5 --metrics m.jsonl
           --no-progress)
  # Missing data says what to run.
  expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir missing
  expect_stderr "train_gpt: error: token file missing/train.bin: no such file; make the token files with prepare_text_tokens"
  HOME=$PWD/home XDG_CACHE_HOME='' MINIDL_SHAKESPEARE_DIR='' expect_status 1 "${trainer[@]}" \
    --checkpoint-dir ckpt
  expect_stderr "home/.cache/minidl/shakespeare/train.bin: no such file; run tools/fetch_shakespeare.sh"
  # Hostile token files: each a clear error naming the file.
  python3 - <<'PYTHON'
import os, struct
def write(folder, header, tokens, extra=b""):
    os.makedirs(folder, exist_ok=True)
    head = list(header) + [0] * (256 - len(header))
    body = struct.pack("<256i", *head) + struct.pack(f"<{len(tokens)}H", *tokens) + extra
    for name in ("train.bin", "val.bin"):
        open(f"{folder}/{name}", "wb").write(body)
good = [i % 50 + 32 for i in range(1000)]
write("bad-magic", [20240521, 1, 1000], good)
write("bad-version", [20240520, 7, 1000], good)
write("short-count", [20240520, 1, 2000], good)
write("extra-bytes", [20240520, 1, 1000], good, b"\x01\x02")
write("big-token", [20240520, 1, 1000], good[:500] + [300] + good[501:])
write("few-tokens", [20240520, 1, 20], good[:20])
os.makedirs("truncated", exist_ok=True)
for name in ("train.bin", "val.bin"):
    open(f"truncated/{name}", "wb").write(struct.pack("<3i", 20240520, 1, 1000))
PYTHON
  for folder in bad-magic bad-version short-count extra-bytes big-token few-tokens truncated; do
    expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir $folder
    expect_stderr "train_gpt: error:"
    expect_stderr "$folder/train.bin"
  done
  expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir bad-magic
  expect_stderr "magic"
  expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir big-token
  expect_stderr "300"
  expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir few-tokens
  expect_stderr "20 tokens, too few for one window of --block-size + 1 = 33 tokens"
  # Checkpoints of another run, or none at all.
  expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir data --resume nowhere.safetensors
  expect_stderr "train_gpt: error: checkpoint nowhere.safetensors: no such file"
  expect_status 0 "$tools/train_gpt" "${small[@]}" --max-steps 6 --eval-interval 3 \
    --checkpoint-dir other --no-progress --sample-tokens 0
  other=("$tools/train_gpt" "${small[@]}" --eval-interval 3 --checkpoint-dir other --no-progress)
  expect_status 1 "${other[@]}" --max-steps 6
  expect_stderr "--checkpoint-dir other holds the checkpoints of an earlier run"
  expect_status 1 "${other[@]}" --max-steps 6 --resume auto --lr 0.5
  expect_stderr "--lr"
  expect_status 1 "${other[@]}" --max-steps 6 --resume auto --precision bf16
  expect_stderr "was trained in fp32 precision, but this run uses bf16"
  printf 'not metrics' >notes.txt
  expect_status 1 "$tools/train_gpt" "${small[@]}" --max-steps 6 --checkpoint-dir ckpt \
    --no-progress --metrics notes.txt
  expect_stderr "--metrics notes.txt: the file exists and is not a metrics file"
  if [[ ${MINIDL_EXPECT_GPU:-0} != 1 ]]; then
    expect_status 1 "${trainer[@]}" --checkpoint-dir ckpt --data-dir data --device cuda
    expect_stderr "train_gpt: error: --device cuda:"
  fi
  [[ ! -e ckpt && ! -e m.jsonl ]] || fail "a failed run left ckpt/ or m.jsonl behind"
  grep -q "Stack\|terminate called\|Aborted" err.txt && fail "an error printed a stack dump"
  echo "every hostile token file and run error exits 1 with one line naming what was wrong"
  echo "PASS"
  ;;
data_parallel)
  # 2 CPU ranks under mpirun, each 8 windows a step; rank 0 alone prints and writes. Then one
  # process with the same global batch (16) resumes the finished run from its checkpoint and
  # evaluates the same weights (on all of val.bin, in batches of 16 instead of 8).
  make_text_tokens
  shape=(--device cpu --data-dir data --n-layer 1 --n-head 2 --n-embd 32 --block-size 32
         --warmup-steps 5 --eval-batches 0 --workers 0 --max-steps 40 --eval-interval 20)
  expect_status 0 mpirun --oversubscribe -np 2 "$tools/train_gpt" "${shape[@]}" --batch-size 8 \
    --log-every 10 --checkpoint-dir ckpt --sample-tokens 20
  [[ $(json_field out.txt world_size) == 2 && $(json_field out.txt steps) == 40 ]] ||
    fail "unexpected summary: $(tail -n 1 out.txt)"
  [[ $(grep -c '^{"model"' out.txt) == 1 && $(grep -c -- '---- sample ----' out.txt) == 1 ]] ||
    { cat out.txt >&2; fail "rank 0 alone should print the sample and the summary"; }
  grep -q $'\033' out.txt && { cat -v out.txt >&2; fail "terminal escape codes in mpirun's output"; }
  val_loss=$(json_field out.txt val_loss)
  expect_status 0 "$tools/train_gpt" "${shape[@]}" --batch-size 16 --no-progress \
    --checkpoint-dir ckpt --resume auto --sample-tokens 0
  [[ $(json_field out.txt world_size) == 1 && $(json_field out.txt steps) == 40 ]] ||
    fail "unexpected resumed summary: $(tail -n 1 out.txt)"
  resumed=$(json_field out.txt val_loss)
  python3 -c "import sys; sys.exit(0 if abs($resumed - $val_loss) < 1e-4 else 1)" ||
    fail "the resumed evaluation gives $resumed, the 2-rank run's $val_loss"
  echo "2 ranks trained, 1 process resumed and evaluated: $(tail -n 1 out.txt)"
  echo "PASS"
  ;;
options)
  # Every option refuses a bad value while parsing: exit 2 and one line naming the option.
  bad_values=(
    "--n-layer 0" "--n-head 0" "--n-embd -1" "--block-size 0" "--block-size 1e3"
    "--dropout nan" "--dropout 1" "--dropout -0.1" "--batch-size 0" "--max-steps 0"
    "--max-steps -5" "--lr 0" "--lr nan" "--lr inf" "--weight-decay -1" "--warmup-steps -1"
    "--clip-grad-norm -1" "--clip-grad-norm nan" "--accumulate 0" "--eval-interval 0"
    "--eval-batches -1" "--sample-tokens -1" "--workers 65" "--seed -1" "--seed 1.5"
    "--log-every 0" "--precision fp8" "--device tpu" "--cuda-graph maybe")
  for bad in "${bad_values[@]}"; do
    read -r option value <<<"$bad"
    expect_status 2 "$tools/train_gpt" "$option" "$value"
    expect_stderr "train_gpt: usage error: $option"
  done
  expect_status 2 "$tools/train_gpt" --batch-size 0
  expect_stderr "train_gpt: usage error: --batch-size: expected an integer >= 1, got 0"
  expect_status 2 "$tools/train_gpt" --no-such-option
  expect_status 2 "$tools/train_gpt" --bias --no-bias
  expect_stderr "give one of --bias and --no-bias, once"
  # Options that do not combine, refused before any data is read.
  expect_status 2 "$tools/train_gpt" --data-dir missing --n-embd 30 --n-head 4
  expect_stderr "train_gpt: usage error: --n-embd 30 must be a multiple of --n-head 4"
  expect_status 2 "$tools/train_gpt" --data-dir missing --max-steps 50 --warmup-steps 50
  expect_stderr "train_gpt: usage error: --warmup-steps 50 must be less than --max-steps 50"
  echo "${#bad_values[@]} bad values refused with exit 2 naming the option"
  echo "PASS"
  ;;
help)
  expect_status 0 "$tools/train_gpt" --help
  for option in --data-dir --n-layer --n-head --n-embd --block-size --dropout --bias --batch-size \
                --max-steps --lr --weight-decay --warmup-steps --clip-grad-norm --accumulate \
                --eval-interval --eval-batches --sample-tokens --device --precision --cuda-graph \
                --deterministic --tf32 --cudnn-benchmark --workers --seed --checkpoint-dir \
                --resume --overwrite \
                --metrics --log-every --log-level --no-progress; do
    grep -q -- "$option" out.txt || fail "--help does not document $option"
  done
  grep -q "fetch_shakespeare.sh" out.txt || fail "--help does not say where the data comes from"
  echo "PASS"
  ;;
*)
  fail "unknown case $case"
  ;;
esac
