#!/usr/bin/env python3
"""Prints PyTorch's learning rates for minidl's schedulers as C++ tables, the reference numbers of
tests/optim/lr_scheduler_pytorch_reference_test.cpp (paste the output over the block between
the "BEGIN/END GENERATED" lines there).

    /root/.cache/minidl/torch-venv/bin/python tools/reference/make_schedule_reference.py > tables.inc

Every case runs one scheduler over STEPS steps of an SGD optimizer with two param groups whose
lrs differ (BASE_LRS), calling optimizer.step() before each scheduler.step() as PyTorch asks.
A table row is one epoch: row 0 is the lr after construction, row e the lr after the e-th
step(). ReduceLROnPlateau's rows are one per step(metric) and also carry the metric and the
scheduler's best, num_bad_epochs and cooldown_counter after it. Values are printed with repr(),
the shortest decimal that reads back to the same double.

The case names match the tests' builders: a case added here needs a builder there.
"""

import math
import sys
import textwrap

import torch
from torch.optim import SGD
from torch.optim.lr_scheduler import (ChainedScheduler, CosineAnnealingLR, ExponentialLR,
                                      LinearLR, MultiStepLR, PolynomialLR, ReduceLROnPlateau,
                                      SequentialLR, StepLR)

STEPS = 12
BASE_LRS = (0.1, 0.025)


def make_optimizer():
    params = [torch.zeros(1, requires_grad=True) for _ in BASE_LRS]
    return SGD([{"params": [p], "lr": lr} for p, lr in zip(params, BASE_LRS)], momentum=0.9)


def group_lrs(optimizer):
    return [float(group["lr"]) for group in optimizer.param_groups]


# name -> (PyTorch call as text, builder). The text is what minidl's test builds; LinearLR always
# has end_factor 1 (minidl's LinearWarmup).
CASES = {
    "StepLR_3_half": ("StepLR(step_size=3, gamma=0.5)", lambda o: StepLR(o, 3, 0.5)),
    "MultiStepLR_repeated": ("MultiStepLR(milestones=[2, 5, 5, 9], gamma=0.3)",
                             lambda o: MultiStepLR(o, [2, 5, 5, 9], 0.3)),
    "CosineAnnealingLR_past_T_max": ("CosineAnnealingLR(T_max=5, eta_min=0.001)",
                                     lambda o: CosineAnnealingLR(o, 5, 0.001)),
    "LinearLR_4": ("LinearLR(start_factor=0.1, total_iters=4)",
                   lambda o: LinearLR(o, 0.1, 1.0, 4)),
    "ExponentialLR_decay": ("ExponentialLR(gamma=0.9)", lambda o: ExponentialLR(o, 0.9)),
    "ExponentialLR_growth": ("ExponentialLR(gamma=1.05)", lambda o: ExponentialLR(o, 1.05)),
    "PolynomialLR_defaults": ("PolynomialLR() (total_iters=5, power=1)",
                              lambda o: PolynomialLR(o)),
    "PolynomialLR_square": ("PolynomialLR(total_iters=8, power=2)",
                            lambda o: PolynomialLR(o, 8, 2.0)),
    "PolynomialLR_root_to_last_step": ("PolynomialLR(total_iters=12, power=0.5)",
                                       lambda o: PolynomialLR(o, 12, 0.5)),
    "PolynomialLR_one_iteration": ("PolynomialLR(total_iters=1, power=3)",
                                   lambda o: PolynomialLR(o, 1, 3.0)),
    "SequentialLR_warmup_cosine": (
        "SequentialLR([LinearLR(0.1, total_iters=3), CosineAnnealingLR(T_max=9)], "
        "milestones=[3])",
        lambda o: SequentialLR(o, [LinearLR(o, 0.1, 1.0, 3), CosineAnnealingLR(o, 9)], [3])),
    "SequentialLR_three": (
        "SequentialLR([ExponentialLR(0.9), StepLR(2, 0.5), PolynomialLR(4, 2)], "
        "milestones=[4, 8])",
        lambda o: SequentialLR(o, [ExponentialLR(o, 0.9), StepLR(o, 2, 0.5),
                                   PolynomialLR(o, 4, 2.0)], [4, 8])),
    "SequentialLR_cut_warmup": (
        "SequentialLR([LinearLR(0.5, total_iters=4), MultiStepLR([2, 5], 0.1)], milestones=[2])",
        lambda o: SequentialLR(o, [LinearLR(o, 0.5, 1.0, 4), MultiStepLR(o, [2, 5], 0.1)], [2])),
    "SequentialLR_milestone_at_last_step": (
        "SequentialLR([StepLR(3, 0.5), ExponentialLR(0.8)], milestones=[12])",
        lambda o: SequentialLR(o, [StepLR(o, 3, 0.5), ExponentialLR(o, 0.8)], [12])),
    "ChainedScheduler_warmup_exponential": (
        "ChainedScheduler([LinearLR(0.1, total_iters=4), ExponentialLR(0.9)])",
        lambda o: ChainedScheduler([LinearLR(o, 0.1, 1.0, 4), ExponentialLR(o, 0.9)])),
    "ChainedScheduler_exponential_cosine": (
        "ChainedScheduler([ExponentialLR(0.9), CosineAnnealingLR(T_max=5, eta_min=0.001)])",
        lambda o: ChainedScheduler([ExponentialLR(o, 0.9), CosineAnnealingLR(o, 5, 0.001)])),
    "ChainedScheduler_cosine_warmup": (
        "ChainedScheduler([CosineAnnealingLR(T_max=6, eta_min=0.002), "
        "LinearLR(0.25, total_iters=3)])",
        lambda o: ChainedScheduler([CosineAnnealingLR(o, 6, 0.002), LinearLR(o, 0.25, 1.0, 3)])),
    "ChainedScheduler_step_multistep_polynomial": (
        "ChainedScheduler([StepLR(3, 0.5), MultiStepLR([2, 4, 4, 9], 0.8), PolynomialLR(10, 1.5)])",
        lambda o: ChainedScheduler([StepLR(o, 3, 0.5), MultiStepLR(o, [2, 4, 4, 9], 0.8),
                                    PolynomialLR(o, 10, 1.5)])),
    "ChainedScheduler_polynomial_to_zero": (
        "ChainedScheduler([PolynomialLR(6, 1), ExponentialLR(0.95)])",
        lambda o: ChainedScheduler([PolynomialLR(o, 6, 1.0), ExponentialLR(o, 0.95)])),
    # At its milestone the SequentialLR restarts LinearLR from its closed form, dropping what
    # StepLR did to the lr before.
    "ChainedScheduler_of_SequentialLR": (
        "ChainedScheduler([SequentialLR([ExponentialLR(0.8), LinearLR(0.5, total_iters=3)], "
        "milestones=[3]), StepLR(2, 0.5)])",
        lambda o: ChainedScheduler([
            SequentialLR(o, [ExponentialLR(o, 0.8), LinearLR(o, 0.5, 1.0, 3)], [3]),
            StepLR(o, 2, 0.5)])),
    # Made after the warmup set the lr, the SequentialLR resets it to initial_lr; the warmup's
    # later steps still multiply.
    "ChainedScheduler_warmup_then_SequentialLR": (
        "ChainedScheduler([LinearLR(0.5, total_iters=2), SequentialLR([StepLR(2, 0.5), "
        "ExponentialLR(0.9)], milestones=[4])])",
        lambda o: ChainedScheduler([
            LinearLR(o, 0.5, 1.0, 2),
            SequentialLR(o, [StepLR(o, 2, 0.5), ExponentialLR(o, 0.9)], [4])])),
}

NAN = float("nan")
# name -> (PyTorch call as text, keyword arguments, metrics)
PLATEAU_CASES = {
    # Improves, stalls within the threshold (1e-4 relative), reduces after patience 2, NaN counts
    # as a bad epoch.
    "Plateau_min_rel": (
        "ReduceLROnPlateau(mode='min', factor=0.5, patience=2)",
        dict(mode="min", factor=0.5, patience=2),
        [1.0, 0.9, 0.89995, 0.9, 0.95, 0.85, NAN, 0.86, 0.87, 0.80, 0.7999, 0.81]),
    # An absolute threshold of 0.05, cooldown 2, per-group min_lr: the second reduction takes
    # group 1 to its min_lr, group 0 on down.
    "Plateau_min_abs_cooldown_min_lrs": (
        "ReduceLROnPlateau(mode='min', patience=1, threshold=0.05, threshold_mode='abs', "
        "cooldown=2, min_lr=[0.0005, 0.002])",
        dict(mode="min", patience=1, threshold=0.05, threshold_mode="abs", cooldown=2,
             min_lr=[0.0005, 0.002]),
        [2.0, 1.96, 1.90, 1.89, 1.88, 1.87, 1.86, 1.70, 1.69, 1.68, 1.67, 1.66]),
    # Max mode, relative threshold 1%, patience 0, one min_lr for both groups.
    "Plateau_max_rel_min_lr": (
        "ReduceLROnPlateau(mode='max', factor=0.5, patience=0, threshold=0.01, cooldown=1, "
        "min_lr=0.01)",
        dict(mode="max", factor=0.5, patience=0, threshold=0.01, cooldown=1, min_lr=0.01),
        [0.50, 0.505, 0.51, 0.52, 0.52, 0.53, 0.60, 0.59, 0.58, 0.61, 0.57, 0.56]),
    # Max mode, absolute threshold; eps 1.5e-3 stops group 1's reductions once they would be
    # smaller than eps, while group 0 goes on.
    "Plateau_max_abs_eps": (
        "ReduceLROnPlateau(mode='max', factor=0.9, patience=0, threshold=0.5, "
        "threshold_mode='abs', eps=1.5e-3)",
        dict(mode="max", factor=0.9, patience=0, threshold=0.5, threshold_mode="abs", eps=1.5e-3),
        [10.0, 10.4, 10.6, 11.2, 11.0, 11.5, 11.6, 11.7, 11.8, 12.9, 12.0, 12.1]),
}


def number(value):
    if math.isnan(value):
        return "kNaN"
    if math.isinf(value):
        return "kInf" if value > 0 else "-kInf"
    return repr(float(value))


def comment(text):
    """`text` as // lines of at most 100 columns."""
    return "".join(f"// {line}\n" for line in textwrap.wrap(text, 97))


def run_case(build):
    optimizer = make_optimizer()
    scheduler = build(optimizer)
    rows = [group_lrs(optimizer)]
    for _ in range(STEPS):
        optimizer.step()
        scheduler.step()
        rows.append(group_lrs(optimizer))
        assert rows[-1] == [float(lr) for lr in scheduler.get_last_lr()]
    return rows


def run_plateau(kwargs, metrics):
    optimizer = make_optimizer()
    scheduler = ReduceLROnPlateau(optimizer, **kwargs)
    rows = []
    for metric in metrics:
        optimizer.step()
        scheduler.step(metric)
        rows.append((metric, *group_lrs(optimizer), scheduler.best, scheduler.num_bad_epochs,
                     scheduler.cooldown_counter))
    return rows


def main():
    out = sys.stdout
    out.write(f"// BEGIN GENERATED by tools/reference/make_schedule_reference.py with PyTorch "
              f"{torch.__version__}\n")
    out.write(f"// Base lrs {BASE_LRS[0]!r} and {BASE_LRS[1]!r}; {STEPS} steps.\n")
    out.write("// clang-format off\n")
    for name, (call, build) in CASES.items():
        rows = run_case(build)
        out.write(f"\n{comment(call)}constexpr LrTable k{name} = {{{{\n")
        for epoch, (lr0, lr1) in enumerate(rows):
            out.write(f"    {{{number(lr0)}, {number(lr1)}}},  // {epoch}\n")
        out.write("}};\n")
    for name, (call, kwargs, metrics) in PLATEAU_CASES.items():
        rows = run_plateau(kwargs, metrics)
        out.write(f"\n{comment(call)}"
                  "// metric, lr 0, lr 1, best, num_bad_epochs, cooldown_counter\n")
        out.write(f"constexpr PlateauTable k{name} = {{{{\n")
        for metric, lr0, lr1, best, bad, cooldown in rows:
            out.write(f"    {{{number(metric)}, {number(lr0)}, {number(lr1)}, {number(best)}, "
                      f"{bad}, {cooldown}}},\n")
        out.write("}};\n")
    out.write("// clang-format on\n")
    out.write("// END GENERATED\n")


if __name__ == "__main__":
    main()
