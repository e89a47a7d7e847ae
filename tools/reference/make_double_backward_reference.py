#!/usr/bin/env python3
"""Writes tests/core/double_backward_reference.h: PyTorch's second derivatives for
tests/core/double_backward_test.cpp, which carries them so that it runs without PyTorch.

    python3 tools/reference/make_double_backward_reference.py [--output tests/core/double_backward_reference.h]

Needs PyTorch (2.15 wrote the checked-in file; the header names the version that wrote it).
Every case is float64 on the CPU. Inputs are "wiggly" sequences, as tests/test_util.h's
testing::wiggly: element i (row-major) is amplitude * sin(1 + phase + 0.37 i) + offset, so the
test builds the same tensors from the same formula:

- unary ops: with v = wiggly(phase 2) and u = wiggly(phase 3), the second derivative
  h = grad(grad(f(x), x, v, create_graph=True), x, u) = u * v * f''(x);
- mul and div of x [2, 3] by a broadcast y [3]: with (gx, gy) = grad(f(x, y), (x, y), w,
  create_graph=True), h = grad(sum(gx * ux) + sum(gy * uy), (x, y));
- a Hessian-vector product of an MLP's loss (linear, tanh, linear, sigmoid, sum) in (x, w1), and
  of a batched matmul's (tanh(a @ b).sum()) in (a, b);
- softmax over dim 1 and log_softmax over dim 0, as the unary ops;
- cross_entropy of logits [3, 4] (targets 3, 0, 1; label smoothing 0.1, mean):
  h = grad(sum(grad(loss, x, create_graph=True) * u), x);
- loss.backward(create_graph=True) on y = sum(x^3 sin x): x.grad, the derivative of
  sum(x.grad * u), and x.grad after that second backward accumulates into it;
- scans, norms, sorting, indexing and a loss (the OTHERS table), as the unary ops but on [2, 4]
  inputs: h = grad(sum(grad(f(x), x, v, create_graph=True) * u), x), with v = wiggly(phase 2) of
  f's shape and u = wiggly(phase 3) of x's; prod and cumprod on inputs with zeros (one and two in
  a row), where their gradients take their other cases;
- a gradient penalty (WGAN-GP style): a discriminator linear(3, 6), tanh, linear(6, 6), relu,
  linear(6, 1) trained by 4 plain SGD steps (lr 0.05) on mse_loss(D(x), y) + 10 * mean over the
  rows of ||d sum(D(x)) / dx||^2; the loss before each step and the weights after the last.
"""
import argparse
import math
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def wiggly(sizes, phase=0.0, amplitude=1.0, offset=0.0, requires_grad=False):
    n = math.prod(sizes)
    values = [amplitude * math.sin(1.0 + phase + 0.37 * i) + offset for i in range(n)]
    return torch.tensor(values, dtype=torch.float64).reshape(sizes).requires_grad_(requires_grad)


# name, function, (amplitude, offset) of x; the test has the same table.
UNARY = [
    ("exp", torch.exp, (1.5, 0.0)),
    ("log", torch.log, (0.5, 1.2)),
    ("sqrt", torch.sqrt, (0.5, 1.2)),
    ("rsqrt", torch.rsqrt, (0.5, 1.2)),
    ("reciprocal", torch.reciprocal, (0.5, 1.2)),
    ("square", torch.square, (1.5, 0.0)),
    ("pow_2_5", lambda x: torch.pow(x, 2.5), (0.5, 1.2)),
    ("pow_neg_1_5", lambda x: torch.pow(x, -1.5), (0.5, 1.2)),
    ("sin", torch.sin, (1.5, 0.0)),
    ("cos", torch.cos, (1.5, 0.0)),
    ("tan", torch.tan, (1.0, 0.0)),
    ("asin", torch.asin, (0.8, 0.0)),
    ("acos", torch.acos, (0.8, 0.0)),
    ("atan", torch.atan, (1.5, 0.0)),
    ("sinh", torch.sinh, (1.5, 0.0)),
    ("cosh", torch.cosh, (1.5, 0.0)),
    ("tanh", torch.tanh, (1.5, 0.0)),
    ("sigmoid", torch.sigmoid, (1.5, 0.0)),
    ("exp2", torch.exp2, (1.5, 0.0)),
    ("expm1", torch.expm1, (1.5, 0.0)),
    ("log1p", torch.log1p, (0.5, 0.2)),
    ("log2", torch.log2, (0.5, 1.2)),
    ("log10", torch.log10, (0.5, 1.2)),
    ("erf", torch.erf, (1.5, 0.0)),
    ("erfc", torch.erfc, (1.5, 0.0)),
    ("gelu", F.gelu, (1.5, 0.0)),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), (1.5, 0.0)),
    ("silu", F.silu, (1.5, 0.0)),
    ("softplus", F.softplus, (1.5, 0.0)),
    ("elu", F.elu, (1.5, 0.0)),
    ("softmax", lambda x: torch.softmax(x.reshape(2, 3), 1), (1.5, 0.0)),
    ("log_softmax", lambda x: torch.log_softmax(x.reshape(2, 3), 0), (1.5, 0.0)),
]


# x [2, 4] = wiggly(phase 0, amplitude 1, offset 0.5) times these, so that prod and cumprod meet a
# row with one zero and a row with two.
ZERO_MASK = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
GATHER_INDEX = [[3, 0, 0], [1, 2, 1]]
EMBEDDING_INDICES = [[0, 1, 3], [3, 3, 2]]


def with_zeros():
    x = wiggly([2, 4], 0.0, 1.0, 0.5) * torch.tensor(ZERO_MASK, dtype=torch.float64).reshape(2, 4)
    return x.requires_grad_(True)


def probabilities():
    return wiggly([2, 4], 0.0, 0.3, 0.5, requires_grad=True)


# name, input, function; the test has the same table (OtherSecondDerivativesMatchPyTorch).
OTHERS = [
    ("prod_dim_with_zeros", with_zeros, lambda x: torch.prod(x, 1)),
    ("prod_with_a_zero", with_zeros, lambda x: torch.prod(x[0])),
    ("cumprod_with_zeros", with_zeros, lambda x: torch.cumprod(x, 1)),
    ("cumprod_dim0", lambda: wiggly([2, 4], 0.0, 1.0, 0.5, requires_grad=True),
     lambda x: torch.cumprod(x, 0)),
    ("cumsum", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.sin(torch.cumsum(x, 1))),
    ("logsumexp", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.logsumexp(x, 1)),
    ("std", lambda: wiggly([2, 4], 0.0, requires_grad=True), lambda x: torch.std(x, 1)),
    ("norm_3", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.linalg.vector_norm(x, 3, dim=1)),
    ("norm_2", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.linalg.vector_norm(x)),
    ("norm_inf_squared", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.linalg.vector_norm(x, math.inf, dim=1) ** 2),
    ("binary_cross_entropy", probabilities,
     lambda x: F.binary_cross_entropy(x, wiggly([2, 4], 1.0, 0.3, 0.5), reduction="none")),
    ("topk", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.topk(x, 2, dim=1).values ** 2),
    ("sort", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.exp(torch.sort(x, dim=0).values)),
    ("gather", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.gather(x, 1, torch.tensor(GATHER_INDEX)) ** 2),
    ("flip", lambda: wiggly([2, 4], 0.0, requires_grad=True),
     lambda x: torch.sin(torch.flip(x, [1])) * x),
    ("embedding", lambda: wiggly([4, 3], 0.0, requires_grad=True),
     lambda w: torch.tanh(F.embedding(torch.tensor(EMBEDDING_INDICES), w, padding_idx=1))),
]


def other_case(make_input, fn):
    x = make_input()
    y = fn(x)
    (g,) = torch.autograd.grad(y, x, wiggly(list(y.shape), 2.0), create_graph=True)
    (h,) = torch.autograd.grad((g * wiggly(list(x.shape), 3.0)).sum(), x)
    return h


def flat(t):
    return ", ".join(repr(v) for v in t.detach().reshape(-1).tolist())


def constant(name, t):
    return f"inline const std::vector<double> {name}{{{flat(t)}}};"


def camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def unary_case(fn, amplitude, offset):
    x = wiggly([6], 0.0, amplitude, offset, requires_grad=True)
    y = fn(x).reshape(-1)
    (g,) = torch.autograd.grad(y, x, wiggly([6], 2.0), create_graph=True)
    (h,) = torch.autograd.grad(g, x, wiggly([6], 3.0))
    return h


def binary_case(fn):
    x = wiggly([2, 3], 0.0, 1.0, 2.0, requires_grad=True)
    y = wiggly([3], 1.0, 0.5, 1.5, requires_grad=True)
    gx, gy = torch.autograd.grad(fn(x, y), (x, y), wiggly([2, 3], 2.0), create_graph=True)
    s = (gx * wiggly([2, 3], 3.0)).sum() + (gy * wiggly([3], 4.0)).sum()
    return torch.autograd.grad(s, (x, y))


def mlp_hvp():
    x = wiggly([4, 3], 0.0, requires_grad=True)
    w1 = wiggly([5, 3], 1.0, 0.5, requires_grad=True)
    b1 = wiggly([5], 2.0, 0.3, requires_grad=True)
    w2 = wiggly([2, 5], 3.0, 0.5, requires_grad=True)
    b2 = wiggly([2], 4.0, 0.3, requires_grad=True)
    loss = torch.sigmoid(F.linear(torch.tanh(F.linear(x, w1, b1)), w2, b2)).sum()
    gx, gw1 = torch.autograd.grad(loss, (x, w1), create_graph=True)
    s = (gx * wiggly([4, 3], 5.0)).sum() + (gw1 * wiggly([5, 3], 6.0)).sum()
    return torch.autograd.grad(s, (x, w1, w2))


def bmm_hvp():
    a = wiggly([2, 3, 4], 0.0, 0.5, requires_grad=True)
    b = wiggly([4, 2], 1.0, 0.5, requires_grad=True)
    loss = torch.tanh(torch.matmul(a, b)).sum()
    ga, gb = torch.autograd.grad(loss, (a, b), create_graph=True)
    s = (ga * wiggly([2, 3, 4], 2.0)).sum() + (gb * wiggly([4, 2], 3.0)).sum()
    return torch.autograd.grad(s, (a, b))


def cross_entropy_case():
    x = wiggly([3, 4], 0.0, 1.5, requires_grad=True)
    loss = F.cross_entropy(x, torch.tensor([3, 0, 1]), label_smoothing=0.1)
    (g,) = torch.autograd.grad(loss, x, create_graph=True)
    (h,) = torch.autograd.grad((g * wiggly([3, 4], 1.0)).sum(), x)
    return h


def backward_create_graph():
    x = wiggly([4], 0.0, 1.5, requires_grad=True)
    y = (x.pow(3) * torch.sin(x)).sum()
    y.backward(create_graph=True)
    assert x.grad.grad_fn is not None
    first = x.grad.detach().clone()
    u = wiggly([4], 1.0)
    (h,) = torch.autograd.grad((x.grad * u).sum(), x, retain_graph=True)
    (x.grad * u).sum().backward()
    return first, h, x.grad.detach().clone()


def discriminator_parameters():
    return [
        wiggly([6, 3], 0.0, 0.5, requires_grad=True),
        wiggly([6], 1.0, 0.2, requires_grad=True),
        wiggly([6, 6], 2.0, 0.4, requires_grad=True),
        wiggly([6], 3.0, 0.2, requires_grad=True),
        wiggly([1, 6], 4.0, 0.5, requires_grad=True),
        wiggly([1], 5.0, 0.2, requires_grad=True),
    ]


def gradient_penalty_training():
    params = discriminator_parameters()
    w1, b1, w2, b2, w3, b3 = params
    x = wiggly([5, 3], 6.0)
    y = wiggly([5, 1], 7.0, 0.5)
    losses = []
    for _ in range(4):
        xin = x.clone().requires_grad_(True)
        out = F.linear(torch.relu(F.linear(torch.tanh(F.linear(xin, w1, b1)), w2, b2)), w3, b3)
        (gx,) = torch.autograd.grad(out.sum(), xin, create_graph=True)
        penalty = (gx * gx).sum(1).mean()
        loss = F.mse_loss(out, y) + 10.0 * penalty
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
    return torch.tensor(losses, dtype=torch.float64), params


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output",
                        default=os.path.join(HERE, "..", "..", "tests", "core",
                                             "double_backward_reference.h"))
    args = parser.parse_args()
    print("PyTorch", torch.__version__)

    lines = [
        "#pragma once",
        "// Written by tools/reference/make_double_backward_reference.py with PyTorch " +
        torch.__version__ + "; do not edit.",
        "#include <vector>",
        "",
        "namespace minidl::double_backward_reference {",
        "",
        "// Unary ops: u * v * f''(x), in the order of the script's table.",
    ]
    for name, fn, (amplitude, offset) in UNARY:
        lines.append(constant("kSecond" + camel(name), unary_case(fn, amplitude, offset)))
    lines.append("// Scans, norms, sorting, indexing, a loss: u * d/dx (v * f'(x)), the OTHERS table.")
    for name, make_input, fn in OTHERS:
        lines.append(constant("kSecond" + camel(name), other_case(make_input, fn)))
    lines.append("// mul and div: the second derivatives in x and in the broadcast y.")
    for name, fn in [("mul", torch.mul), ("div", torch.div)]:
        hx, hy = binary_case(fn)
        lines.append(constant("kSecond" + camel(name) + "X", hx))
        lines.append(constant("kSecond" + camel(name) + "Y", hy))
    lines.append("// cross_entropy: the derivative of sum(grad * u) in the logits.")
    lines.append(constant("kSecondCrossEntropy", cross_entropy_case()))
    lines.append("// Hessian-vector products.")
    hx, hw1, hw2 = mlp_hvp()
    lines += [constant("kMlpHvpX", hx), constant("kMlpHvpW1", hw1), constant("kMlpHvpW2", hw2)]
    ha, hb = bmm_hvp()
    lines += [constant("kBatchedMatmulHvpA", ha), constant("kBatchedMatmulHvpB", hb)]
    lines.append("// backward(create_graph=True).")
    first, h, accumulated = backward_create_graph()
    lines += [constant("kBackwardGrad", first), constant("kBackwardSecond", h),
              constant("kBackwardAccumulated", accumulated)]
    lines.append("// Gradient-penalty training: the loss before each step, the weights after.")
    losses, params = gradient_penalty_training()
    lines.append(constant("kPenaltyLosses", losses))
    for name, p in zip(["W1", "B1", "W2", "B2", "W3", "B3"], params):
        lines.append(constant("kPenalty" + name, p))
    lines += ["", "}  // namespace minidl::double_backward_reference", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print("wrote", os.path.normpath(args.output))


if __name__ == "__main__":
    main()
