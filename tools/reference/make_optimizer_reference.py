#!/usr/bin/env python3
"""Prints PyTorch's parameters and optimizer state for minidl's Adam, AdamW, RMSprop and Adagrad
as C++ tables, the reference numbers of tests/optim/adam_test.cpp, tests/optim/rmsprop_test.cpp
and tests/optim/adagrad_test.cpp (paste the output over the block between the "BEGIN/END
GENERATED" lines there).

    /root/.cache/minidl/torch-venv/bin/python tools/reference/make_optimizer_reference.py adam > adam.inc
    /root/.cache/minidl/torch-venv/bin/python tools/reference/make_optimizer_reference.py rmsprop
    /root/.cache/minidl/torch-venv/bin/python tools/reference/make_optimizer_reference.py adagrad

Every case runs torch.optim.Adam, AdamW, RMSprop or Adagrad for STEPS steps on two param groups (a [2, 3]
parameter in group 0 with the case's defaults, a [4] parameter in group 1 with options of its
own), in float32 and float64, on the CPU with the default foreach=None and fused=None, which on
the CPU is the single-tensor step (_single_tensor_adam, _single_tensor_rmsprop,
_single_tensor_adagrad: the foreach
kernels need a CUDA device; the script checks that it is so). Parameters start at, and the
gradients of step s are, dyadic fractions (exact in both dtypes), so minidl's test builds the
same inputs from the same formulas. A case lists the parameters (group 0's six elements, then
group 1's four) after every step, and every state tensor after the last step as (key, group,
elements); a group that keeps no such state (amsgrad off) has no entry. Values are
printed with repr() of the exact double (of the float32, for float32 runs), the shortest
decimal that reads back to the same number.

The case names match the tests' builders: a case added here needs a builder there.
"""

import argparse
import sys

import torch
from torch.optim import Adagrad, Adam, AdamW, RMSprop
from torch.optim.optimizer import _default_to_fused_or_foreach

STEPS = 5
SHAPES = ((2, 3), (4,))


def initial_values(group, numel):
    """Parameter element i of group g at the start: exact in float32."""
    return [((i * 5 + group * 3) % 9 - 4) / 8 for i in range(numel)]


def gradient_values(group, numel, step):
    """Gradient element i of group g at step s (1-based): exact in float32, some zeros."""
    return [((i * 7 + step * 3 + group * 5) % 11 - 5) / 16 for i in range(numel)]


# name -> (optimizer class, group 0's options (the defaults), group 1's own options)
ADAM_CASES = {
    "Adam_plain": (Adam, dict(lr=0.01), dict(lr=0.05, betas=(0.8, 0.99))),
    "Adam_amsgrad_weight_decay": (Adam, dict(lr=0.02, amsgrad=True, weight_decay=0.1),
                                  dict(lr=0.01, amsgrad=False, weight_decay=0.0, eps=1e-3)),
    "Adam_maximize": (Adam, dict(lr=0.01, maximize=True, weight_decay=0.05),
                      dict(lr=0.03, maximize=False, amsgrad=True, betas=(0.5, 0.9))),
    "AdamW_defaults": (AdamW, dict(), dict(lr=0.05, weight_decay=0.5, amsgrad=True)),
    "AdamW_maximize_amsgrad": (AdamW, dict(lr=0.02, maximize=True, amsgrad=True, eps=1e-4),
                               dict(lr=0.01, weight_decay=0.0, betas=(0.95, 0.5))),
}
RMSPROP_CASES = {
    "RMSprop_plain": (RMSprop, dict(lr=0.01), dict(lr=0.02, alpha=0.9)),
    "RMSprop_centered_momentum": (RMSprop, dict(lr=0.01, centered=True, momentum=0.9),
                                  dict(lr=0.005, momentum=0.0, weight_decay=0.1)),
    "RMSprop_maximize_weight_decay": (RMSprop, dict(lr=0.01, maximize=True, weight_decay=0.2,
                                                    eps=1e-3),
                                      dict(lr=0.03, momentum=0.5, centered=True, alpha=0.5)),
}
ADAGRAD_CASES = {
    "Adagrad_plain": (Adagrad, dict(lr=0.1), dict(lr=0.05, eps=1e-3)),
    "Adagrad_lr_decay_weight_decay": (Adagrad, dict(lr=0.1, lr_decay=0.25, weight_decay=0.1),
                                      dict(lr=0.2, initial_accumulator_value=0.5)),
    "Adagrad_maximize_initial_value": (Adagrad, dict(lr=0.05, maximize=True,
                                                     initial_accumulator_value=0.25),
                                       dict(lr=0.1, maximize=False, lr_decay=0.5,
                                            weight_decay=0.3, eps=0.01)),
}
CASES = {"adam": ADAM_CASES, "rmsprop": RMSPROP_CASES, "adagrad": ADAGRAD_CASES}
STATE_KEYS = {
    Adam: ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
    AdamW: ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
    RMSprop: ("step", "square_avg", "momentum_buffer", "grad_avg"),
    Adagrad: ("step", "sum"),
}


def run_case(optimizer_class, defaults, group1_options, dtype):
    params = [torch.tensor(initial_values(g, torch.Size(shape).numel()), dtype=dtype)
              .reshape(shape).requires_grad_(True) for g, shape in enumerate(SHAPES)]
    fused, foreach = _default_to_fused_or_foreach(params, differentiable=False)
    if fused or foreach:
        sys.exit("expected PyTorch's single-tensor step on the CPU, but it would use "
                 f"fused={fused} foreach={foreach}")
    optimizer = optimizer_class([{"params": [params[0]]},
                                 {"params": [params[1]], **group1_options}], **defaults)
    rows = []
    for step in range(1, STEPS + 1):
        for g, p in enumerate(params):
            p.grad = torch.tensor(gradient_values(g, p.numel(), step), dtype=dtype).reshape(p.shape)
        optimizer.step()
        rows.append([float(v) for p in params for v in p.detach().flatten().tolist()])
    state = []  # (key, group, values); a group without the state (amsgrad off) has no entry
    for key in STATE_KEYS[optimizer_class]:
        for g, p in enumerate(params):
            if key in optimizer.state[p]:
                state.append((key, g, [float(v) for v in
                                       optimizer.state[p][key].flatten().tolist()]))
    return rows, state


def numbers(values):
    return "{" + ", ".join(repr(v) for v in values) + "}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("optimizer", choices=sorted(CASES))
    args = parser.parse_args()
    cases = CASES[args.optimizer]
    print(f"// BEGIN GENERATED by tools/reference/make_optimizer_reference.py {args.optimizer} with PyTorch "
          f"{torch.__version__}")
    print("// clang-format off")
    print("const std::vector<ReferenceRun> kReferenceRuns = {")
    for name, (optimizer_class, defaults, group1_options) in cases.items():
        for dtype, dtype_name in ((torch.float32, "kFloat32"), (torch.float64, "kFloat64")):
            rows, state = run_case(optimizer_class, defaults, group1_options, dtype)
            print(f"    {{\"{name}\", {dtype_name},")
            print("     {" + ",\n      ".join(numbers(row) for row in rows) + "},")
            print("     {" + ",\n      ".join(f"{{\"{key}\", {group}, {numbers(values)}}}"
                                           for key, group, values in state) + "}},")
    print("};")
    print("// clang-format on")
    print("// END GENERATED")


if __name__ == "__main__":
    main()
