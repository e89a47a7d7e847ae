#!/usr/bin/env python3
"""Writes tests/nn/loss_reference.h: PyTorch's values for the losses of ops/pointwise_loss.h,
the weighted nll_loss and F::normalize (tests/nn/loss_test.cpp), which the tests carry so that
they run without PyTorch.

    python3 tools/reference/make_loss_reference.py [--output tests/nn/loss_reference.h]

Needs PyTorch (2.15.0 wrote the checked-in file). The inputs are written out too (formulas
below, no random numbers). Each entry is named "loss.case.reduction.dtype": the loss's output
computed by PyTorch on the CPU in float64 and in float32 (from the float64 inputs rounded to
float32), for every reduction; "...grad_input.float64" and "...grad_target.float64" are the
float64 gradients of the summed loss where PyTorch differentiates that argument.
"""
import argparse
import math
import os
import warnings

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REDUCTIONS = ("none", "mean", "sum")
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def inputs():
    """The inputs, as float64 tensors (the tests read them from the header)."""
    t = {}
    count = 12  # [4, 3]
    t["logits"] = torch.tensor([3.0 * math.sin(1.3 * i + 0.4) for i in range(count)],
                               dtype=torch.float64).reshape(4, 3)
    t["logits"][1, 1] = 0.0  # -log(sigmoid(0)) and its gradient at 0
    t["probability_target"] = torch.tensor([(math.cos(0.7 * i) + 1) / 2 for i in range(count)],
                                           dtype=torch.float64).reshape(4, 3)
    t["probability_target"][0, 2] = 0.0
    t["probability_target"][2, 0] = 1.0
    t["probabilities"] = torch.sigmoid(t["logits"])
    # BCE clamps log(0) at -100: an exact 0 and 1 among the probabilities.
    t["saturated_probabilities"] = t["probabilities"].clone()
    t["saturated_probabilities"][3, 0] = 0.0
    t["saturated_probabilities"][3, 1] = 1.0
    t["class_weight"] = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    t["pos_weight"] = torch.tensor([1.5, 0.7, 3.0], dtype=torch.float64)
    t["row_weight"] = torch.tensor([[0.25], [1.0], [1.5], [0.75]], dtype=torch.float64)
    t["regression_input"] = torch.tensor([2.0 * math.sin(0.9 * i + 0.1) for i in range(count)],
                                         dtype=torch.float64).reshape(4, 3)
    t["regression_target"] = torch.tensor([1.5 * math.cos(0.5 * i) for i in range(count)],
                                          dtype=torch.float64).reshape(4, 3)
    t["regression_row_target"] = torch.tensor([0.3, -0.4, 1.1], dtype=torch.float64)
    # l1_loss at input == target: PyTorch's gradient there is sign(0) = 0.
    l1_tie_target = t["regression_target"].clone()
    for i, j in ((0, 0), (2, 1), (3, 2)):
        l1_tie_target[i, j] = t["regression_input"][i, j]
    t["l1_tie_target"] = l1_tie_target
    t["kl_input"] = F.log_softmax(t["logits"], dim=1)
    kl_target = F.softmax(t["regression_input"], dim=1)
    kl_target[2] = torch.tensor([0.0, 0.25, 0.75], dtype=torch.float64)  # xlogy(0, 0) = 0
    t["kl_target"] = kl_target
    t["kl_log_target"] = F.log_softmax(t["regression_target"], dim=1)
    nll_logits = torch.tensor([math.sin(0.8 * i + 0.3) * 2 for i in range(15)],
                              dtype=torch.float64).reshape(5, 3)
    t["nll_log_probs"] = F.log_softmax(nll_logits, dim=1)
    t["nll_target"] = torch.tensor([0, 2, 1, -100, 2], dtype=torch.float64)
    t["nll_target_without_ignored"] = torch.tensor([0, 2, 1, 1, 2], dtype=torch.float64)
    t["nll_weight"] = torch.tensor([0.3, 1.0, 2.5], dtype=torch.float64)
    normalize_input = t["regression_input"].clone()
    normalize_input[2] = 0.0  # a zero vector stays zero (eps)
    t["normalize_input"] = normalize_input
    t["normalize_upstream"] = torch.tensor([0.5 + i / 12 for i in range(count)],
                                           dtype=torch.float64).reshape(4, 3)
    return t


def cases(t):
    """(name, function of (reduction, dtype) returning (output, {argument: leaf}), reductions)."""
    def fresh(name, dtype):
        # A new tensor each run (to() of the same dtype would return the input itself, and its
        # gradient would pile up from run to run).
        return t[name].detach().to(dtype, copy=True)

    def bce_logits(weight, pos_weight):
        def run(reduction, dtype):
            x = fresh("logits", dtype).requires_grad_()
            y = fresh("probability_target", dtype).requires_grad_()
            w = fresh(weight, dtype) if weight else None
            pw = fresh(pos_weight, dtype) if pos_weight else None
            return F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw,
                                                      reduction=reduction), {"input": x,
                                                                             "target": y}
        return run

    def bce(probabilities, weight):
        def run(reduction, dtype):
            x = fresh(probabilities, dtype).requires_grad_()
            y = fresh("probability_target", dtype).requires_grad_()
            w = fresh(weight, dtype) if weight else None
            return F.binary_cross_entropy(x, y, weight=w, reduction=reduction), {"input": x,
                                                                                 "target": y}
        return run

    def regression(loss, target, **kwargs):
        def run(reduction, dtype):
            x = fresh("regression_input", dtype).requires_grad_()
            y = fresh(target, dtype).requires_grad_()
            return loss(x, y, reduction=reduction, **kwargs), {"input": x, "target": y}
        return run

    def kl(log_target):
        def run(reduction, dtype):
            x = fresh("kl_input", dtype).requires_grad_()
            y = fresh("kl_log_target" if log_target else "kl_target", dtype)
            # The target's gradient at a zero target is NaN in PyTorch (0/0): compared only with
            # log_target, whose targets are all finite.
            leaves = {"input": x}
            if log_target:
                y.requires_grad_()
                leaves["target"] = y
            return F.kl_div(x, y, reduction=reduction, log_target=log_target), leaves
        return run

    def nll(target, weight, ignore_index):
        def run(reduction, dtype):
            x = fresh("nll_log_probs", dtype).requires_grad_()
            y = t[target].to(torch.int64)
            w = fresh(weight, dtype) if weight else None
            return F.nll_loss(x, y, weight=w, ignore_index=ignore_index,
                              reduction=reduction), {"input": x}
        return run

    def normalize(p, dim):
        def run(reduction, dtype):
            del reduction  # not a loss: one "none" entry
            x = fresh("normalize_input", dtype).requires_grad_()
            out = F.normalize(x, p=p, dim=dim)
            return out * fresh("normalize_upstream", dtype), {"input": x}
        return run

    return [
        ("bce_with_logits.plain", bce_logits(None, None), REDUCTIONS),
        ("bce_with_logits.weight", bce_logits("class_weight", None), REDUCTIONS),
        ("bce_with_logits.pos_weight", bce_logits(None, "pos_weight"), REDUCTIONS),
        ("bce_with_logits.both", bce_logits("row_weight", "pos_weight"), REDUCTIONS),
        ("bce.plain", bce("probabilities", None), REDUCTIONS),
        ("bce.weight", bce("probabilities", "class_weight"), REDUCTIONS),
        ("bce.saturated", bce("saturated_probabilities", "row_weight"), REDUCTIONS),
        ("smooth_l1.beta1", regression(F.smooth_l1_loss, "regression_target"), REDUCTIONS),
        ("smooth_l1.beta0.5",
         regression(F.smooth_l1_loss, "regression_target", beta=0.5), REDUCTIONS),
        ("smooth_l1.beta0", regression(F.smooth_l1_loss, "regression_target", beta=0.0),
         REDUCTIONS),
        ("smooth_l1.broadcast",
         regression(F.smooth_l1_loss, "regression_row_target", beta=0.5), REDUCTIONS),
        ("l1.plain", regression(F.l1_loss, "regression_target"), REDUCTIONS),
        ("l1.broadcast", regression(F.l1_loss, "regression_row_target"), REDUCTIONS),
        ("l1.ties", regression(F.l1_loss, "l1_tie_target"), REDUCTIONS),
        ("huber.delta1", regression(F.huber_loss, "regression_target"), REDUCTIONS),
        ("huber.delta0.7", regression(F.huber_loss, "regression_target", delta=0.7),
         REDUCTIONS),
        ("kl_div.probabilities", kl(False), ("none", "batchmean", "sum", "mean")),
        ("kl_div.log_target", kl(True), ("none", "batchmean", "sum", "mean")),
        ("nll.weight", nll("nll_target", "nll_weight", -100), REDUCTIONS),
        ("nll.weight_ignore2", nll("nll_target_without_ignored", "nll_weight", 2), REDUCTIONS),
        ("nll.ignore2", nll("nll_target_without_ignored", None, 2), REDUCTIONS),
        ("normalize.p2_dim1", normalize(2.0, 1), ("none",)),
        ("normalize.p1_dim0", normalize(1.0, 0), ("none",)),
    ]


def values(tensor):
    return [float(v) for v in tensor.detach().to(torch.float64).reshape(-1)]


def entry(name, numbers):
    return '  {"%s", {%s}},' % (name, ", ".join(repr(v) for v in numbers))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "nn",
                                                         "loss_reference.h"))
    args = parser.parse_args()
    # Broadcasting smooth_l1's target and kl_div's "mean" are deliberate here.
    warnings.filterwarnings("ignore", category=UserWarning)
    t = inputs()
    entries = [entry("input." + name, values(tensor)) for name, tensor in t.items()]
    for name, run, reductions in cases(t):
        for reduction in reductions:
            for dtype_name, dtype in DTYPES.items():
                out, _ = run(reduction, dtype)
                entries.append(entry("%s.%s.%s" % (name, reduction, dtype_name), values(out)))
        # The float64 gradients of the first reduction's output ("none"), summed.
        out, leaves = run(reductions[0], torch.float64)
        out.sum().backward()
        for argument, leaf in leaves.items():
            if not torch.isfinite(leaf.grad).all():
                continue  # the target's gradient log(1 - x) - log(x) at a saturated x
            entries.append(entry("%s.grad_%s.float64" % (name, argument), values(leaf.grad)))
    out = [
        "#pragma once",
        "// Written by tools/reference/make_loss_reference.py with PyTorch %s; do not edit." %
        torch.__version__,
        "// PyTorch's losses on the CPU (tests/nn/loss_test.cpp): names and inputs in the script.",
        "#include <map>",
        "#include <string>",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "// clang-format off",
        "inline const std::map<std::string, std::vector<double>> kLossReference = {",
        *entries,
        "};",
        "// clang-format on",
        "",
        "}  // namespace minidl::testing",
        "",
    ]
    with open(args.output, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
