#!/usr/bin/env python3
"""Writes tests/nn/rnn_reference.h: PyTorch's recurrent modules (nn.RNN, nn.LSTM, nn.GRU and
their cells) on fixed weights and inputs, which tests/nn/rnn_test.cpp carries so that it runs
without PyTorch.

    python3 tools/reference/make_rnn_reference.py [--output tests/nn/rnn_reference.h]

Needs PyTorch (2.15.0 wrote the checked-in file). Every value is a wiggly() sequence of the
tests: element k (row-major) of a tensor with phase p is sin(1 + p + 0.37 k), computed in double,
scaled, then rounded to the case's dtype:
  input phase 0 (shaped as the module takes it: batch_first, unbatched), h0 phase 1 times 0.5,
  c0 phase 2 times 0.5; the upstream gradients of output, h_n and c_n phases 3, 4 and 5;
  parameter number i of named_parameters() phase 10 + i, times 0.4.
For each case, from PyTorch on the CPU in the case's dtype: the output, h_n and c_n, and the
gradients of sum(output * up_out) + sum(h_n * up_h) + sum(c_n * up_c) for the input, h0, c0 and
every parameter, and the parameters' names and shapes. A cell's output is its h' (and c'). Adding
a case: a line in CASES below.

Besides, the bytes of a safetensors file that safetensors.torch.save_file wrote from the
state_dict of a PyTorch LSTM (input_size 2, hidden_size 3, 2 layers, bidirectional, proj_size 2,
float32) with PyTorch's own initialisation after torch.manual_seed(0), and that LSTM's output,
h_n and c_n on the wiggly input [4, 2, 2] (phase 0): the test loads the file with nn::load.
"""
import argparse
import math
import os

import torch
from safetensors.torch import save

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {"float32": torch.float32, "float64": torch.float64}

# name, module, input_size, hidden_size, num_layers, bias, batch_first, bidirectional, proj_size,
# nonlinearity, dtype, sequence length, batch (0: unbatched), with_state (initial state given)
CASES = [
    ("lstm_bidirectional_state", "LSTM", 4, 6, 2, True, False, True, 0, "tanh", "float64", 5, 3,
     True),
    ("lstm_bidirectional_batch_first", "LSTM", 4, 6, 2, True, True, True, 0, "tanh", "float32",
     5, 3, False),
    ("lstm_unbatched_state", "LSTM", 4, 6, 2, True, False, True, 0, "tanh", "float64", 5, 0,
     True),
    ("lstm_projection_no_bias", "LSTM", 4, 6, 2, False, True, True, 3, "tanh", "float64", 5, 3,
     True),
    ("lstm_one_layer", "LSTM", 4, 6, 1, True, False, False, 0, "tanh", "float32", 5, 3, True),
    ("gru_bidirectional_state", "GRU", 4, 6, 2, True, False, True, 0, "tanh", "float64", 5, 3,
     True),
    ("gru_bidirectional_batch_first", "GRU", 4, 6, 2, True, True, True, 0, "tanh", "float32", 5,
     3, False),
    ("gru_unbatched_state", "GRU", 4, 6, 2, True, False, True, 0, "tanh", "float64", 5, 0, True),
    ("gru_no_bias", "GRU", 4, 6, 1, False, False, False, 0, "tanh", "float32", 5, 3, True),
    ("rnn_tanh_bidirectional_state", "RNN", 4, 6, 2, True, False, True, 0, "tanh", "float64", 5,
     3, True),
    ("rnn_relu_batch_first", "RNN", 4, 6, 2, True, True, False, 0, "relu", "float32", 5, 3,
     False),
    ("lstm_cell_state", "LSTMCell", 4, 6, 1, True, False, False, 0, "tanh", "float64", 1, 3,
     True),
    ("lstm_cell_unbatched", "LSTMCell", 4, 6, 1, True, False, False, 0, "tanh", "float32", 1, 0,
     False),
    ("gru_cell_state", "GRUCell", 4, 6, 1, True, False, False, 0, "tanh", "float64", 1, 3, True),
    ("gru_cell_unbatched_no_bias", "GRUCell", 4, 6, 1, False, False, False, 0, "tanh", "float32",
     1, 0, True),
    ("rnn_cell_tanh_state", "RNNCell", 4, 6, 1, True, False, False, 0, "tanh", "float64", 1, 3,
     True),
    ("rnn_cell_relu", "RNNCell", 4, 6, 1, True, False, False, 0, "relu", "float32", 1, 3, False),
]


def wiggly(sizes, phase, dtype, scale=1.0):
    count = math.prod(sizes)
    values = [scale * math.sin(1.0 + phase + 0.37 * k) for k in range(count)]
    return torch.tensor(values, dtype=torch.float64).reshape(sizes).to(dtype)


def make_module(case):
    (_, module, input_size, hidden, layers, bias, batch_first, bidirectional, proj_size,
     nonlinearity, dtype_name, _, _, _) = case
    dtype = DTYPES[dtype_name]
    if module in ("RNN", "LSTM", "GRU"):
        kwargs = dict(num_layers=layers, bias=bias, batch_first=batch_first,
                      bidirectional=bidirectional, dtype=dtype)
        if module == "RNN":
            kwargs["nonlinearity"] = nonlinearity
        if module == "LSTM":
            kwargs["proj_size"] = proj_size
        return getattr(torch.nn, module)(input_size, hidden, **kwargs)
    kwargs = dict(bias=bias, dtype=dtype)
    if module == "RNNCell":
        kwargs["nonlinearity"] = nonlinearity
    return getattr(torch.nn, module)(input_size, hidden, **kwargs)


def case_values(case):
    (_, module_name, input_size, hidden, layers, _, batch_first, bidirectional, proj_size, _,
     dtype_name, length, batch, with_state) = case
    dtype = DTYPES[dtype_name]
    module = make_module(case)
    with torch.no_grad():
        for i, (_, parameter) in enumerate(module.named_parameters()):
            parameter.copy_(wiggly(tuple(parameter.shape), 10 + i, dtype, 0.4))
    is_cell = module_name.endswith("Cell")
    is_lstm = module_name.startswith("LSTM")
    if is_cell:
        input_shape = (batch, input_size) if batch else (input_size,)
        h_shape = c_shape = (batch, hidden) if batch else (hidden,)
    else:
        input_shape = ((batch, length, input_size) if batch_first else
                       (length, batch, input_size)) if batch else (length, input_size)
        states = layers * (2 if bidirectional else 1)
        out_features = proj_size if proj_size else hidden
        h_shape = (states, batch, out_features) if batch else (states, out_features)
        c_shape = (states, batch, hidden) if batch else (states, hidden)
    x = wiggly(input_shape, 0.0, dtype).requires_grad_()
    h0 = wiggly(h_shape, 1.0, dtype, 0.5).requires_grad_()
    c0 = wiggly(c_shape, 2.0, dtype, 0.5).requires_grad_()
    state = ((h0, c0) if is_lstm else h0) if with_state else None

    c_n = None
    if is_cell:
        result = module(x, state)
        if is_lstm:
            h_n, c_n = result
        else:
            h_n = result
        out = h_n
    else:
        out, final = module(x, state)
        if is_lstm:
            h_n, c_n = final
        else:
            h_n = final
    loss = (out * wiggly(tuple(out.shape), 3.0, dtype)).sum()
    if not is_cell:  # a cell's output is h', counted once
        loss = loss + (h_n * wiggly(tuple(h_n.shape), 4.0, dtype)).sum()
    if c_n is not None:
        loss = loss + (c_n * wiggly(tuple(c_n.shape), 5.0, dtype)).sum()
    loss.backward()

    def values(t):
        return [] if t is None else [float(v) for v in t.detach().double().flatten().tolist()]

    named = list(module.named_parameters())
    return {
        "names": [name for name, _ in named],
        "shapes": [list(p.shape) for _, p in named],
        "out": values(out),
        "h_n": values(h_n),
        "c_n": values(c_n),
        "grad_input": values(x.grad),
        "grad_h0": values(h0.grad if with_state else None),
        "grad_c0": values(c0.grad if with_state and is_lstm else None),
        "grad_parameters": [values(p.grad) for _, p in named],
    }


def pytorch_file_values():
    """The safetensors bytes of a PyTorch LSTM's state_dict and its outputs (see the docstring)."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(2, 3, num_layers=2, bidirectional=True, proj_size=2)
    data = save(lstm.state_dict())
    with torch.no_grad():
        out, (h_n, c_n) = lstm(wiggly((4, 2, 2), 0.0, torch.float32))
    return data, [float(v) for t in (out, h_n, c_n) for v in t.double().flatten().tolist()]


def format_values(values, dtype_name):
    text = repr if dtype_name == "float64" else (lambda v: f"{v:.9g}")
    return "{" + ", ".join(text(v) for v in values) + "}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(HERE, "..", "..", "tests", "nn",
                                                         "rnn_reference.h"))
    args = parser.parse_args()
    lines = [
        "#pragma once",
        f"// Written by tools/reference/make_rnn_reference.py with PyTorch {torch.__version__}; do not "
        "edit.",
        "// PyTorch's nn.RNN, nn.LSTM, nn.GRU and cells on the script's weights and inputs.",
        "#include <cstdint>",
        "#include <string>",
        "#include <vector>",
        "",
        "namespace minidl::testing {",
        "",
        "struct RnnReference {",
        "  const char* name;",
        "  const char* module;  // \"RNN\", \"LSTM\", \"GRU\", \"RNNCell\", \"LSTMCell\", \"GRUCell\"",
        "  int64_t input_size, hidden_size, num_layers;",
        "  bool bias, batch_first, bidirectional;",
        "  int64_t proj_size;",
        "  const char* nonlinearity;  // \"tanh\" or \"relu\"",
        "  const char* dtype;         // \"float32\" or \"float64\"",
        "  int64_t length, batch;     // batch 0: unbatched input",
        "  bool with_state;           // h0 (and c0) given",
        "  std::vector<std::string> parameter_names;",
        "  std::vector<std::vector<int64_t>> parameter_shapes;",
        "  std::vector<double> out, h_n, c_n, grad_input, grad_h0, grad_c0;",
        "  std::vector<std::vector<double>> grad_parameters;",
        "};",
        "",
        "// clang-format off",
        "inline const RnnReference kRnnReferences[] = {",
    ]
    for case in CASES:
        (name, module, input_size, hidden, layers, bias, batch_first, bidirectional, proj_size,
         nonlinearity, dtype_name, length, batch, with_state) = case
        v = case_values(case)

        def flag(b):
            return "true" if b else "false"

        lines.append(f"  {{\"{name}\", \"{module}\", {input_size}, {hidden}, {layers}, "
                     f"{flag(bias)}, {flag(batch_first)}, {flag(bidirectional)}, {proj_size}, "
                     f"\"{nonlinearity}\", \"{dtype_name}\", {length}, {batch}, "
                     f"{flag(with_state)},")
        lines.append("   {" + ", ".join(f"\"{n}\"" for n in v["names"]) + "},")
        lines.append("   {" + ", ".join("{" + ", ".join(str(d) for d in s) + "}"
                                        for s in v["shapes"]) + "},")
        for key in ("out", "h_n", "c_n", "grad_input", "grad_h0", "grad_c0"):
            lines.append(f"   {format_values(v[key], dtype_name)},")
        lines.append("   {" + ", ".join(format_values(g, dtype_name)
                                        for g in v["grad_parameters"]) + "},")
        lines.append("  },")
    lines.append("};")
    data, outputs = pytorch_file_values()
    lines += [
        "",
        "// A safetensors file PyTorch wrote: the state_dict of the script's pytorch_file_values()",
        "// LSTM, and that LSTM's output [4, 2, 4], h_n [4, 2, 2] and c_n [4, 2, 3], in one list.",
        "inline const std::vector<uint8_t> kPyTorchLstmSafetensors = {"
        + ", ".join(str(b) for b in data) + "};",
        "inline const std::vector<double> kPyTorchLstmOutputs = "
        + format_values(outputs, "float32") + ";",
        "// clang-format on", "", "}  // namespace minidl::testing", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
