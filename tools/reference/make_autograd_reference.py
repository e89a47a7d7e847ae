#!/usr/bin/env python3
"""Writes tests/core/autograd_grad_reference.h: torch.autograd.grad's results for
tests/core/autograd_grad_test.cpp, which carries them so that it runs without PyTorch.

    python3 tools/reference/make_autograd_reference.py [--output tests/core/autograd_grad_reference.h]

Needs PyTorch (2.15 wrote the checked-in file). Every case is float64 on the CPU with the
inputs written below (the test builds the same graphs from the same numbers):

- two outputs, a scalar one with an implicit gradient and a vector one with a given gradient,
  differentiated with respect to two leaves and a non-leaf in the middle of the graph:
  h = x * w; y1 = (tanh(h) * h).sum(); y2 = exp(h) * x; grad([y1, y2], [x, h, w], [None, g2]);
- the gradient of a small MLP's loss with respect to its input and first weight:
  loss = sigmoid(linear(tanh(linear(x, w1, b1)), w2, b2)).sum(); grad(loss, [x, w1]).
"""
import argparse
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

X = [0.5, -1.2, 2.0]
W = [1.5, 0.3, -0.7]
G2 = [0.2, -1.0, 0.7]

MLP_X = [[0.3, -0.8, 1.1], [-0.4, 0.9, 0.25]]
MLP_W1 = [[0.2, -0.5, 0.7], [0.6, 0.1, -0.3], [-0.9, 0.4, 0.05], [0.35, -0.15, 0.8]]
MLP_B1 = [0.1, -0.2, 0.3, 0.0]
MLP_W2 = [[0.5, -0.6, 0.25, 0.9], [-0.3, 0.8, -0.45, 0.1]]
MLP_B2 = [0.05, -0.1]


def t(values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def flat(tensor):
    return ", ".join(repr(v) for v in tensor.detach().reshape(-1).tolist())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output",
                        default=os.path.join(HERE, "..", "..", "tests", "core",
                                             "autograd_grad_reference.h"))
    args = parser.parse_args()

    x, w = t(X), t(W)
    h = x * w
    y1 = (torch.tanh(h) * h).sum()
    y2 = torch.exp(h) * x
    gx, gh, gw = torch.autograd.grad([y1, y2], [x, h, w],
                                     [None, torch.tensor(G2, dtype=torch.float64)])

    mx, w1, b1, w2, b2 = t(MLP_X), t(MLP_W1), t(MLP_B1), t(MLP_W2), t(MLP_B2)
    loss = torch.sigmoid(torch.nn.functional.linear(
        torch.tanh(torch.nn.functional.linear(mx, w1, b1)), w2, b2)).sum()
    mgx, mgw1 = torch.autograd.grad(loss, [mx, w1])

    lines = [
        "#pragma once",
        "// Written by tools/reference/make_autograd_reference.py with PyTorch " + torch.__version__ +
        "; do not edit.",
        "#include <vector>",
        "",
        "namespace minidl::autograd_reference {",
        "",
        "// grad([y1, y2], [x, h, w], [None, g2]) of the script's first case.",
        f"inline const std::vector<double> kTwoOutputsGradX{{{flat(gx)}}};",
        f"inline const std::vector<double> kTwoOutputsGradH{{{flat(gh)}}};",
        f"inline const std::vector<double> kTwoOutputsGradW{{{flat(gw)}}};",
        "// grad(loss, [x, w1]) of the script's MLP.",
        f"inline const std::vector<double> kMlpGradX{{{flat(mgx)}}};",
        f"inline const std::vector<double> kMlpGradW1{{{flat(mgw1)}}};",
        "",
        "}  // namespace minidl::autograd_reference",
        "",
    ]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print("torch", torch.__version__, "wrote", args.output)


if __name__ == "__main__":
    main()
