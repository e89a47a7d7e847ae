#!/usr/bin/env python3
"""PyTorch's numbers for train_gpt's exactness test (issue 28), written to
tests/models/gpt_reference.h:

    python3 tools/reference/make_gpt_reference.py [--output tests/models/gpt_reference.h]

The default GPT of the recipe (tools/pytorch/gpt_pytorch.py: vocab 256, block 128, 4 layers, 4 heads,
128 channels, no bias, no dropout) in float32 on the CPU with one thread, its weights and its
batches given by formulas instead of random draws, so that minidl's test builds the same ones:

  weights   parameter j of named_parameters() (wte, wpe, the blocks, ln_f; the tied lm_head
            weight is wte's and is not listed again), element k in row-major order, computed in
            float64 and rounded to float32:
                a = 0.001 * k * k + 0.37 * k + 1.1 * j (the k * k term makes the matrices
                full-rank; a linear phase gives rank-2 ones, whose degenerate network
                amplifies rounding from step 6 on)
                LayerNorm weights (ln_1, ln_2, ln_f):  1 + 0.05 * sin(a)
                every other parameter:                 0.02 * sin(a)
  batches   the stream data[i] = (7 i^2 + 13 i + 5) % 251, i in [0, 100000); step s, row b
            (batch 32): start = ((32 s + b) * 9973) % (100000 - 129), x = data[start : +128],
            y = data[start + 1 : +128]
  steps     20 of: loss = model(x, y); record it; backward; clip_grad_norm_(1.0); every group's
            lr = get_lr(s) (lr 1e-3, warm-up 100, decay over 2000 steps to 1e-4); AdamW step
            (betas 0.9, 0.99, eps 1e-8, weight decay 0.1 on the matrices, 0 on the rest);
            zero_grad(set_to_none=True)

The header holds the 20 losses (each before its step's update), the learning rates used, and,
to check minidl's forward and backward on their own, the first loss, the gradient's L2 norm at
step 0 before and after clipping, and the parameter counts (the tied weight once; with and
without the position embeddings). Values are printed with 17 significant digits, which read
back to the same double. The script runs the steps twice and stops if the two runs differ, so
that the numbers are reproducible.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
from torch.optim.optimizer import _default_to_fused_or_foreach

HERE = os.path.dirname(os.path.abspath(__file__))
# The twin's model, in tools/pytorch/.
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
from gpt_pytorch import GPT, GPTConfig, get_lr  # noqa: E402

STEPS = 20
BATCH_SIZE = 32
STREAM_LENGTH = 100_000
STREAM_MODULUS = 251
START_STRIDE = 9973
LEARNING_RATE = 1e-3
MIN_LR = LEARNING_RATE / 10
WARMUP_ITERS = 100
MAX_STEPS = 2000  # lr_decay_iters of the schedule
BETAS = (0.9, 0.99)
WEIGHT_DECAY = 0.1
CLIP_NORM = 1.0
LAYER_NORM_WEIGHT_SUFFIXES = ("ln_1.weight", "ln_2.weight", "ln_f.weight")


def set_formula_weights(model):
    for j, (name, parameter) in enumerate(model.named_parameters()):
        k = np.arange(parameter.numel(), dtype=np.float64)
        angle = 0.001 * k * k + 0.37 * k + 1.1 * j
        if name.endswith(LAYER_NORM_WEIGHT_SUFFIXES):
            values = 1.0 + 0.05 * np.sin(angle)
        else:
            values = 0.02 * np.sin(angle)
        with torch.no_grad():
            parameter.copy_(torch.from_numpy(values.astype(np.float32)).view(parameter.shape))


def formula_batch(step, block_size):
    """(x, y), each [BATCH_SIZE, block_size] int64."""
    i = np.arange(STREAM_LENGTH, dtype=np.int64)
    stream = (i * i * 7 + i * 13 + 5) % STREAM_MODULUS
    rows = []
    for b in range(BATCH_SIZE):
        start = ((step * BATCH_SIZE + b) * START_STRIDE) % (STREAM_LENGTH - (block_size + 1))
        rows.append(stream[start:start + block_size + 1])
    windows = torch.from_numpy(np.stack(rows))
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def gradient_norm(parameters):
    return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in parameters
                         if p.grad is not None))


def run():
    """The 20 steps; returns a dict of the header's values."""
    torch.manual_seed(0)  # irrelevant (the weights are set below), but fixed
    config = GPTConfig()
    model = GPT(config)
    set_formula_weights(model)
    model.train()
    parameters = list(model.parameters())
    optimizer = model.configure_optimizers(WEIGHT_DECAY, LEARNING_RATE, BETAS)
    fused, foreach = _default_to_fused_or_foreach(parameters, differentiable=False)
    if fused or foreach:
        sys.exit("make_gpt_reference.py: expected PyTorch's single-tensor AdamW on the CPU, but "
                 f"it would use fused={fused} foreach={foreach}")
    losses, learning_rates = [], []
    norm_before = norm_after = None
    for step in range(STEPS):
        x, y = formula_batch(step, config.block_size)
        _, loss = model(x, y)
        losses.append(loss.item())
        loss.backward()
        total_norm = float(torch.nn.utils.clip_grad_norm_(parameters, CLIP_NORM))
        if step == 0:
            norm_before, norm_after = total_norm, gradient_norm(parameters)
        lr = get_lr(step, LEARNING_RATE, WARMUP_ITERS, MAX_STEPS, MIN_LR)
        learning_rates.append(lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return {"losses": losses, "learning_rates": learning_rates,
            "grad_norm_before_clip": norm_before, "grad_norm_after_clip": norm_after,
            "parameters": model.num_parameters(),
            "non_embedding_parameters": model.num_parameters(non_embedding=True)}


def literal(value):
    return f"{value:.17g}"


def header(values):
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_gpt_reference.py with PyTorch {torch.__version__}; do not edit.",
        "// PyTorch's numbers for train_gpt's exactness test: the default GPT (vocab 256, block",
        "// 128, 4 layers, 4 heads, 128 channels, no bias) with formula weights and batches, 20",
        "// float32 AdamW steps with clipping and nanoGPT's schedule, on the CPU (one thread).",
        "// The formulas and the steps are in the script's docstring.",
        "#include <cstdint>",
        "",
        "namespace minidl::testing {",
        "",
        f"inline constexpr int kGptReferenceSteps = {STEPS};",
        "",
        "// clang-format off",
        "// Step s's loss, before its update.",
        "inline constexpr double kGptReferenceLosses[kGptReferenceSteps] = {",
        *(f"    {literal(v)}," for v in values["losses"]),
        "};",
        "// The learning rate of step s's update (get_lr(s), max_steps 2000).",
        "inline constexpr double kGptReferenceLearningRates[kGptReferenceSteps] = {",
        *(f"    {literal(v)}," for v in values["learning_rates"]),
        "};",
        "// clang-format on",
        "",
        "// The loss of the first batch with the formula weights, before any update.",
        f"inline constexpr double kGptReferenceFirstLoss = {literal(values['losses'][0])};",
        "// The L2 norm of all gradients of step 0, before and after clip_grad_norm_(1.0).",
        "inline constexpr double kGptReferenceGradNormBeforeClip = "
        f"{literal(values['grad_norm_before_clip'])};",
        "inline constexpr double kGptReferenceGradNormAfterClip = "
        f"{literal(values['grad_norm_after_clip'])};",
        "// Every parameter once: the tied wte / lm_head weight counts once; wpe counts.",
        f"inline constexpr int64_t kGptReferenceParameterCount = {values['parameters']};",
        "// The same without the position embeddings (wpe), as nanoGPT's get_num_params().",
        "inline constexpr int64_t kGptReferenceNonEmbeddingParameterCount = "
        f"{values['non_embedding_parameters']};",
        "",
        "}  // namespace minidl::testing",
    ]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "models",
                                                         "gpt_reference.h"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    first, second = run(), run()
    if first != second:
        sys.exit("make_gpt_reference.py: two runs gave different numbers; not writing "
                 f"{args.output}:\n{first}\n{second}")
    with open(args.output, "w") as output:
        output.write(header(first))
    print(f"make_gpt_reference.py: wrote {args.output}: losses {first['losses'][0]:.6f} -> "
          f"{first['losses'][-1]:.6f}, grad norm {first['grad_norm_before_clip']:.6f}")


if __name__ == "__main__":
    main()
