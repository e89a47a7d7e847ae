#!/usr/bin/env bash
# End-to-end checks of train_lenet and train_cifar10 (CTest e2e.trainers.<case>):
#   trainers_e2e.sh <tools dir> <scratch dir> <case>
# cases: accuracy, resume_after_signal, errors, help, cifar10_smoke, data_parallel (mpirun). Each prints what it checks and
# exits non-zero on the first failure. Real data: Fashion-MNIST from the Debian package.
set -uo pipefail
tools=$1 scratch=$2 case=$3
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1

fail() { echo "FAIL: $*" >&2; exit 1; }
# The value of "$2" in the JSON object on the last line of file $1.
json_field() { tail -n 1 "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }
# Runs a trainer expecting exit status $1, with stderr in err.txt and stdout in out.txt.
expect_status() {
  local want=$1; shift
  "$@" >out.txt 2>err.txt
  local got=$?
  [[ $got == "$want" ]] || { cat out.txt err.txt >&2; fail "$* exited $got, expected $want"; }
}
expect_stderr() { grep -qF -- "$1" err.txt || { cat err.txt >&2; fail "stderr lacks: $1"; }; }

# Small, fast settings shared by the cases.
small=(--limit-train 6400 --limit-test 2000 --batch-size 64 --workers 1)

case $case in
accuracy)
  # 3 epochs on 10,000 images: the stated bar is 0.80 (measured: see the README's Training).
  expect_status 0 "$tools/train_lenet" --limit-train 10000 --limit-test 2000 --epochs 3 \
    --checkpoint-dir "" --no-progress --metrics metrics.jsonl
  accuracy=$(json_field out.txt test_accuracy)
  echo "test accuracy after 3 epochs on 10,000 images: $accuracy"
  python3 -c "import sys; sys.exit(0 if $accuracy >= 0.80 else 1)" || fail "accuracy $accuracy < 0.80"
  [[ $(wc -l <metrics.jsonl) == 3 ]] || fail "metrics.jsonl should have 3 lines"
  for key in epoch step lr train_loss test_loss test_accuracy images_per_sec seconds; do
    grep -q "\"$key\":" metrics.jsonl || fail "metrics.jsonl lacks $key"
  done
  for key in model dataset epochs steps test_accuracy test_loss train_images_per_sec wall_seconds \
             device precision world_size; do
    json_field out.txt "$key" >/dev/null || fail "the summary line lacks $key"
  done
  ;;
resume_after_signal)
  # An uninterrupted run, then the same run stopped by SIGINT and resumed: same final figures.
  expect_status 0 "$tools/train_lenet" "${small[@]}" --epochs 2 --checkpoint-dir straight --no-progress
  tail -n 1 out.txt >straight.json
  "$tools/train_lenet" "${small[@]}" --epochs 2 --checkpoint-dir stopped --log-every 5 \
    >stopped.out 2>stopped.err &
  pid=$!
  for _ in $(seq 600); do grep -q "step 15/" stopped.out 2>/dev/null && break; sleep 0.1; done
  kill -INT $pid
  wait $pid
  status=$?
  cat stopped.err >err.txt
  [[ $status == 130 ]] || { cat stopped.out stopped.err >&2; fail "SIGINT: exit $status, expected 130"; }
  expect_stderr "train_lenet: stopped by SIGINT after step"
  expect_stderr "checkpoint saved to stopped/checkpoint-"
  expect_stderr "continue with --resume auto"
  saved=$(grep -o 'stopped/checkpoint-[0-9]*\.safetensors' stopped.err | tail -n 1)
  [[ -f $saved ]] || fail "the checkpoint $saved is not there"
  expect_status 0 "$tools/train_lenet" "${small[@]}" --epochs 2 --checkpoint-dir stopped --resume auto \
    --no-progress
  for key in steps test_accuracy test_loss; do
    [[ $(json_field out.txt $key) == $(json_field straight.json $key) ]] ||
      fail "$key differs: resumed $(json_field out.txt $key), straight $(json_field straight.json $key)"
  done
  echo "stopped at $saved; resumed run ends as the straight one: $(tail -n 1 out.txt)"
  ;;
errors)
  trainer=("$tools/train_lenet" "${small[@]}" --epochs 1 --checkpoint-dir ckpt --metrics m.jsonl
           --no-progress)
  expect_status 1 "${trainer[@]}" --data-dir missing
  expect_stderr "train_lenet: error: dataset fashion-mnist: no folder missing; install the Debian package dataset-fashion-mnist or pass --data-dir"
  mkdir corrupt
  for name in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
              t10k-labels-idx1-ubyte; do
    printf 'not an idx file' >corrupt/$name
  done
  expect_status 1 "${trainer[@]}" --data-dir corrupt
  expect_stderr "train_lenet: error:"
  expect_stderr "corrupt/train-"
  printf 'garbage' >garbage.safetensors
  expect_status 1 "${trainer[@]}" --resume garbage.safetensors
  expect_stderr "garbage.safetensors"
  expect_status 1 "${trainer[@]}" --resume nowhere.safetensors
  expect_stderr "train_lenet: error: checkpoint nowhere.safetensors: no such file"
  expect_status 0 "$tools/train_cifar10" --dataset fashion-mnist --model resnet20 --max-steps 1 \
    --limit-train 64 --limit-test 64 --batch-size 32 --no-progress --checkpoint-dir resnet
  expect_status 1 "${trainer[@]}" --resume "$(ls resnet/checkpoint-*.safetensors)"
  expect_stderr "holds the model \"resnet20\", but this run trains \"lenet\""
  expect_status 1 "${trainer[@]}" --device cuda
  expect_stderr "train_lenet: error: --device cuda:"
  expect_stderr "use --device cpu (or auto)"
  expect_status 0 "$tools/train_lenet" "${small[@]}" --max-steps 2 --precision fp16 --no-progress \
    --checkpoint-dir fp16
  expect_status 1 "${trainer[@]}" --resume "$(ls fp16/checkpoint-*.safetensors)"
  expect_stderr "was trained in fp16 precision, but this run uses fp32; resume with the same precision"
  expect_status 2 "${trainer[@]}" --epochs zero
  expect_stderr "train_lenet: usage error:"
  expect_status 2 "${trainer[@]}" --no-such-option
  expect_status 2 "$tools/train_lenet" --model resnet20
  # None of the failed runs left files behind.
  [[ ! -e ckpt && ! -e m.jsonl ]] || fail "a failed run left ckpt/ or m.jsonl behind"
  grep -q "Stack\|terminate called\|Aborted" err.txt && fail "an error printed a stack dump"
  echo "every error exits with its status and one line naming what was wrong"
  ;;
help)
  expect_status 0 "$tools/train_lenet" --help
  for option in --data-dir --dataset --model --epochs --batch-size --lr --momentum --nesterov \
                --weight-decay --schedule --warmup-epochs --device --precision --workers --seed \
                --checkpoint-dir --checkpoint-every --resume --metrics --max-steps --limit-train \
                --limit-test --log-level --no-progress; do
    grep -q -- "$option" out.txt || fail "--help does not document $option"
  done
  grep -q "fashion-mnist" out.txt || fail "--help does not show the default dataset"
  expect_status 0 "$tools/train_cifar10" --help
  grep -q "resnet20" out.txt || fail "train_cifar10 --help does not show the default model"
  ;;
cifar10_smoke)
  expect_status 0 "$tools/train_cifar10" --dataset fashion-mnist --model resnet20 --epochs 1 \
    --limit-train 512 --limit-test 256 --batch-size 64 --no-progress --checkpoint-dir ""
  [[ $(json_field out.txt model) == resnet20 && $(json_field out.txt steps) == 8 ]] ||
    fail "unexpected summary: $(tail -n 1 out.txt)"
  echo "$(tail -n 1 out.txt)"
  ;;
data_parallel)
  # 2 CPU ranks under mpirun (2048 images: 32 steps of 2 x 32 per epoch), then the checkpoint of
  # the 2-rank run resumed by one process (64 steps of 32 per epoch) for a third epoch.
  expect_status 0 mpirun --oversubscribe -np 2 "$tools/train_lenet" --device cpu --limit-train 2048 \
    --limit-test 1000 --batch-size 32 --epochs 2 --workers 0 --no-progress --checkpoint-dir ckpt
  [[ $(json_field out.txt world_size) == 2 && $(json_field out.txt steps) == 64 ]] ||
    fail "unexpected summary: $(tail -n 1 out.txt)"
  [[ $(grep -c '^{"model"' out.txt) == 1 && $(grep -c '^epoch 2/2 ' out.txt) == 1 ]] ||
    { cat out.txt >&2; fail "rank 0 alone should print the epoch lines and the summary"; }
  [[ $(ls ckpt | wc -l) == 2 ]] || fail "expected the checkpoints of 2 epochs, found: $(ls ckpt)"
  expect_status 0 "$tools/train_lenet" --device cpu --limit-train 2048 --limit-test 1000 \
    --batch-size 32 --epochs 3 --workers 0 --no-progress --checkpoint-dir ckpt --resume auto
  [[ $(json_field out.txt world_size) == 1 && $(json_field out.txt steps) == 128 &&
     $(json_field out.txt epochs) == 3 ]] || fail "unexpected resumed summary: $(tail -n 1 out.txt)"
  echo "2 ranks for 2 epochs, then resumed by 1 process: $(tail -n 1 out.txt)"
  ;;
*) fail "unknown case $case" ;;
esac
echo PASS
