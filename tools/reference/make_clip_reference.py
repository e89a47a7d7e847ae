#!/usr/bin/env python3
"""Prints PyTorch's results for the cases of tests/nn/clip_grad_test.cpp, as C++ constants.

    /root/.cache/minidl/torch-venv/bin/python tools/reference/make_clip_reference.py

Every gradient is filled by the formula the test uses, exact in every dtype:
element k of a gradient with salt s is ((37 k + 11 s) mod 101 - 50) / 16. For each case the
script runs torch.nn.utils.clip_grad_norm_ (or clip_grad_value_) and prints the total norm and
the coefficient PyTorch multiplied the gradients by, as exact hexadecimal floats. It asserts
that every clipped gradient equals T(float(g) * coef) (the gradient's dtype T, the product in
float, or double for float64), so the test can check every element from the coefficient alone.
"""
import math

import torch
from torch.nn.utils import clip_grad_norm_, clip_grad_value_


def filled(shape, dtype, salt):
    numel = math.prod(shape)
    values = [((37 * k + 11 * salt) % 101 - 50) / 16.0 for k in range(numel)]
    parameter = torch.zeros(shape, dtype=dtype, requires_grad=True)
    parameter.grad = torch.tensor(values, dtype=torch.float64).to(dtype).reshape(shape)
    return parameter


def hex_literal(value):
    """An exact C++ hexadecimal floating literal, without the trailing zeros of float.hex()."""
    mantissa, exponent = float(value).hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}"


def product_dtype(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def norm_case(name, specs, max_norm, norm_type):
    parameters = [filled(shape, dtype, salt) for shape, dtype, salt in specs]
    before = [p.grad.clone() for p in parameters]
    total = clip_grad_norm_(parameters, max_norm, norm_type)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for old, p in zip(before, parameters):
        acc = product_dtype(old.dtype)
        expected = (old.to(acc) * coef.to(acc)).to(old.dtype)
        assert torch.equal(expected, p.grad), name
    print(f"    {{\"{name}\", {hex_literal(total)}, {hex_literal(coef)}, "
          f"\"{str(total.dtype).replace('torch.', '')}\"}},  "
          f"// norm {float(total)!r}, coef {float(coef)!r}")


def main():
    f32, f16, bf16, f64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
    three = [((3, 4), f32, 1), ((5,), f32, 2), ((2, 3, 7), f32, 3)]
    inf = float("inf")
    print(f"// PyTorch {torch.__version__}: name, total norm, coefficient, norm dtype")
    norm_case("f32_two", three, 1.0, 2.0)
    norm_case("f32_inf", three, 1.0, inf)
    norm_case("f32_one", three, 1.0, 1.0)
    norm_case("f32_three", three, 1.0, 3.0)
    norm_case("f32_two_unclipped", three, 100.0, 2.0)
    norm_case("f16_two", [((3, 4), f16, 1), ((2, 3, 7), f16, 2)], 1.0, 2.0)
    norm_case("f16_inf", [((3, 4), f16, 1), ((2, 3, 7), f16, 2)], 1.0, inf)
    norm_case("bf16_two", [((3, 4), bf16, 1), ((2, 3, 7), bf16, 2)], 1.0, 2.0)
    norm_case("f16_bf16_two", [((3, 4), f16, 1), ((2, 3, 7), bf16, 2)], 1.0, 2.0)
    norm_case("f32_f16_two", [((3, 4), f32, 1), ((2, 3, 7), f16, 2)], 0.5, 2.0)
    norm_case("f64_f32_two", [((3, 4), f64, 1), ((2, 3, 7), f32, 2)], 1.0, 2.0)
    norm_case("f32_chunks_two", [((40000,), f32, 4), ((17,), f32, 5)], 1.0, 2.0)
    norm_case("f32_chunks_inf", [((40000,), f32, 4), ((17,), f32, 5)], 1.0, inf)

    # clip_grad_value_: the values of the clamped gradients' sums (the test checks elements).
    for name, dtype, clip in [("value_f32", f32, 1.0), ("value_f16", f16, 0.1)]:
        parameter = filled((2, 3, 7), dtype, 2)
        clip_grad_value_([parameter], clip)
        print(f"// {name}: clamped to {clip!r}, sum {float(parameter.grad.double().sum())!r}")


if __name__ == "__main__":
    main()
