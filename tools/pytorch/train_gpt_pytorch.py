#!/usr/bin/env python3
"""train_gpt's default recipe (issue 28) in PyTorch, for side-by-side losses and speed on the
same machine:

    python3 tools/pytorch/train_gpt_pytorch.py [--max-steps 2000] [--batch-size 32] [--lr 1e-3]
        [--device cpu|cuda] [--precision fp32|bf16] [--compile] [--threads N] [--seed 0]
        [--data-dir ${XDG_CACHE_HOME:-~/.cache}/minidl/shakespeare]
        [--init FILE.safetensors] [--save FILE.safetensors]

The model is tools/pytorch/gpt_pytorch.py's nanoGPT GPT with train_gpt's defaults: bytes (vocabulary
256), block 128, 4 layers, 4 heads, 128 channels, no bias, no dropout (836,736 parameters).
AdamW (betas 0.9, 0.99, eps 1e-8; weight decay 0.1 on the matrices and embeddings, none on the
LayerNorm weights), nanoGPT's schedule (linear warm-up over 100 steps, cosine decay to lr / 10
at --max-steps), gradients clipped to norm 1 every step. Each training batch is --batch-size
windows of 129 tokens at random starts, drawn with torch.randint (so not minidl's draws: compare
losses across seeds, not run by run). Every --eval-interval steps and at the end, the validation
loss is the mean loss of the first --eval-iters batches of consecutive windows of val.bin
(window i starts at token 128 i), in evaluation mode without gradients.

The data are llm.c token files train.bin and val.bin, as tools/fetch_shakespeare.sh writes
them (to $MINIDL_SHAKESPEARE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/minidl/shakespeare, this
script's default --data-dir too).

--precision bf16 runs the forward pass and the loss in torch.autocast(bfloat16) (the
evaluation too, not the sample); the weights, gradients and optimizer stay float32. fp32 on CUDA is exact float32 (TF32 off), as minidl's
default. --compile trains through torch.compile(model) (the evaluation too; the sample is drawn
by the model as it is); its compilation happens in the first steps and counts in the times.

--init reads the starting weights from a safetensors file with nanoGPT's names (every tensor of
the model's state_dict, no other; transformer.wte.weight and lm_head.weight both present and
equal, as the model ties them); --save writes the final weights the same way (float32, both
tied names as separate tensors, which safetensors needs and minidl's loader reads). Both need
the PyPI package safetensors.

Prints the loss every --log-interval steps, the validation loss at each evaluation, a sample of
200 bytes generated from a newline (temperature 0.8, top-k 40) at the end, and, last, one JSON
object: steps, val_loss (the last evaluation), val_losses ([step, loss] of every evaluation),
train_loss (the mean training loss of the last --log-interval steps), tokens_per_sec (training
tokens over the training steps' time, evaluations excluded), wall_s (the whole run: data
loading, evaluations and the sample included), params (the tied weight once, wpe included).
"""
import argparse
import json
import math
import os
import sys
import time

import torch

from gpt_pytorch import GPT, GPTConfig, get_lr, read_token_file

NEWLINE = 10  # the byte the sample starts from
SAMPLE_BYTES = 200
SAMPLE_TEMPERATURE = 0.8
SAMPLE_TOP_K = 40
WARMUP_ITERS = 100
BETAS = (0.9, 0.99)
EPS = 1e-8
WEIGHT_DECAY = 0.1
CLIP_NORM = 1.0


def default_data_dir():
    if os.environ.get("MINIDL_SHAKESPEARE_DIR"):
        return os.environ["MINIDL_SHAKESPEARE_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "minidl", "shakespeare")


def windows(tokens, starts, block_size):
    """(x, y) [len(starts), block_size] of the windows of block_size + 1 tokens at `starts`."""
    offsets = starts[:, None] + torch.arange(block_size + 1, device=tokens.device)
    window = tokens[offsets]
    return window[:, :-1].contiguous(), window[:, 1:].contiguous()


def random_batch(tokens, batch_size, block_size, generator):
    # start uniform over [0, n - block_size - 1]: the last window ends at the last token.
    starts = torch.randint(0, len(tokens) - block_size, (batch_size,), generator=generator,
                           device=tokens.device)
    return windows(tokens, starts, block_size)


def evaluation_batches(tokens, batch_size, block_size, eval_iters):
    """The first eval_iters (fewer if val.bin holds fewer) full batches of consecutive windows:
    window i starts at token block_size * i."""
    window_count = (len(tokens) - 1) // block_size
    batch_count = min(eval_iters, window_count // batch_size)
    if batch_count < 1:
        sys.exit(f"train_gpt_pytorch.py: error: the validation tokens hold {window_count} windows "
                 f"of {block_size + 1} tokens, expected at least one batch of {batch_size}")
    starts = torch.arange(batch_count * batch_size, device=tokens.device) * block_size
    return [windows(tokens, batch_starts, block_size)
            for batch_starts in starts.split(batch_size)]


def save_weights(model, path):
    from safetensors.torch import save_file
    # Tied tensors share storage, which save_file refuses: each name gets its own copy.
    tensors = {name: tensor.detach().float().cpu().clone().contiguous()
               for name, tensor in model.state_dict().items()}
    save_file(tensors, path)


def load_weights(model, path):
    from safetensors.torch import load_file
    tensors = load_file(path)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        sys.exit(f"train_gpt_pytorch.py: error: --init {path}: expected exactly the model's "
                 f"tensors; missing {missing}, unexpected {unexpected}")
    for name, tensor in tensors.items():
        if tensor.shape != expected[name].shape:
            sys.exit(f"train_gpt_pytorch.py: error: --init {path}: {name} has shape "
                     f"{list(tensor.shape)}, expected {list(expected[name].shape)}")
    if not torch.equal(tensors["transformer.wte.weight"], tensors["lm_head.weight"]):
        sys.exit(f"train_gpt_pytorch.py: error: --init {path}: transformer.wte.weight and "
                 "lm_head.weight differ, but the model ties them (one tensor)")
    model.load_state_dict(tensors, strict=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--max-steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    parser.add_argument("--eval-interval", type=int, default=250)
    parser.add_argument("--eval-iters", type=int, default=20)
    parser.add_argument("--log-interval", type=int, default=50)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--compile", action="store_true", help="train through torch.compile")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", default="", metavar="FILE.safetensors",
                        help="start from these weights (nanoGPT's names)")
    parser.add_argument("--save", default="", metavar="FILE.safetensors",
                        help="write the final weights here (nanoGPT's names)")
    args = parser.parse_args()
    for name in ("max_steps", "batch_size", "eval_interval", "eval_iters", "log_interval"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')}: expected a positive number, got "
                         f"{getattr(args, name)}")
    run_start = time.perf_counter()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"

    config = GPTConfig()
    train_tokens = read_token_file(os.path.join(args.data_dir, "train.bin"),
                                   config.vocab_size).to(device)
    val_tokens = read_token_file(os.path.join(args.data_dir, "val.bin"),
                                 config.vocab_size).to(device)
    model = GPT(config)
    if args.init:
        load_weights(model, args.init)
    model.to(device)
    parameters = model.num_parameters()
    print(f"train_gpt_pytorch: {parameters:,} parameters; {len(train_tokens):,} training and "
          f"{len(val_tokens):,} validation tokens from {args.data_dir}", flush=True)
    optimizer = model.configure_optimizers(WEIGHT_DECAY, args.lr, BETAS, EPS)
    forward = torch.compile(model) if args.compile else model
    autocast_dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    autocast_enabled = args.precision == "bf16"
    # On the tokens' device, so that drawing a batch copies nothing from the host.
    generator = torch.Generator(device=device).manual_seed(args.seed)
    val_batches = evaluation_batches(val_tokens, args.batch_size, config.block_size,
                                     args.eval_iters)

    def evaluate():
        model.eval()
        losses = []
        with torch.no_grad(), torch.autocast(device.type, dtype=autocast_dtype,
                                             enabled=autocast_enabled):
            for x, y in val_batches:
                losses.append(forward(x, y)[1].float())
        model.train()
        return torch.stack(losses).mean().item()

    def synchronize():
        if on_gpu:
            torch.cuda.synchronize()

    val_losses = []
    train_seconds = 0.0
    interval_loss_sum = torch.zeros((), device=device)
    interval_steps, train_loss = 0, math.nan
    model.train()
    synchronize()
    step_start = time.perf_counter()
    for step in range(args.max_steps):
        lr = get_lr(step, args.lr, WARMUP_ITERS, args.max_steps, args.lr / 10)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = random_batch(train_tokens, args.batch_size, config.block_size, generator)
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_enabled):
            _, loss = forward(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        # Summed on the device, read once per interval: no synchronisation per step.
        interval_loss_sum += loss.detach().float()
        interval_steps += 1
        done = step + 1
        last = done == args.max_steps
        log_now = done % args.log_interval == 0 or last
        evaluate_now = done % args.eval_interval == 0 or last
        if not (log_now or evaluate_now):
            continue
        synchronize()
        train_seconds += time.perf_counter() - step_start
        if log_now:
            train_loss = interval_loss_sum.item() / interval_steps
            tokens_per_sec = done * args.batch_size * config.block_size / train_seconds
            print(f"step {done}/{args.max_steps}: loss {train_loss:.4f} (mean of the last "
                  f"{interval_steps}), lr {lr:.3g}, {tokens_per_sec:,.0f} tokens/s", flush=True)
            interval_loss_sum.zero_()
            interval_steps = 0
        if evaluate_now:
            val_losses.append([done, evaluate()])
            print(f"step {done}: val loss {val_losses[-1][1]:.4f}", flush=True)
        step_start = time.perf_counter()

    model.eval()
    # In float32 whatever --precision: the sample shows the weights, not the autocast.
    start = torch.full((1, 1), NEWLINE, dtype=torch.long, device=device)
    sample = model.generate(start, SAMPLE_BYTES, SAMPLE_TEMPERATURE, SAMPLE_TOP_K)
    text = bytes(sample[0, 1:].tolist()).decode("utf-8", errors="replace")
    print(f"sample (temperature {SAMPLE_TEMPERATURE}, top-k {SAMPLE_TOP_K}):\n{text}", flush=True)
    if args.save:
        save_weights(model, args.save)
        print(f"train_gpt_pytorch: wrote the final weights to {args.save}", flush=True)
    print(json.dumps({
        "framework": "pytorch", "model": "gpt", "steps": args.max_steps,
        "val_loss": val_losses[-1][1], "val_losses": val_losses, "train_loss": train_loss,
        "tokens_per_sec": args.max_steps * args.batch_size * config.block_size / train_seconds,
        "train_s": train_seconds, "wall_s": time.perf_counter() - run_start,
        "params": parameters, "batch_size": args.batch_size, "block_size": config.block_size,
        "lr": args.lr, "seed": args.seed, "device": str(device), "precision": args.precision,
        "compile": args.compile, "threads": torch.get_num_threads(),
        "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
