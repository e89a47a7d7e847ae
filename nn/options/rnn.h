#pragma once
// Options of the recurrent modules (nn::RNN, nn::LSTM, nn::GRU) and their cells (nn::RNNCell,
// nn::LSTMCell, nn::GRUCell), with LibTorch's names and defaults.
#include <cstdint>

#include "minidl/core/arg.h"

namespace minidl::nn {

// The activation of nn::RNN and nn::RNNCell (LibTorch's torch::kTanh and torch::kReLU).
enum class RNNNonlinearity { Tanh, ReLU };

// The fields RNN, LSTM and GRU share, spelled once. Each struct declares them itself (rather
// than inheriting them) so that every setter returns that struct and chains with its own
// fields: LSTMOptions(4, 6).num_layers(2).proj_size(3).
#define MINIDL_RNN_OPTIONS_FIELDS                                                          \
  /* Features of each step of the input sequence. */                                       \
  MINIDL_ARG(int64_t, input_size);                                                         \
  /* Features of the hidden state. */                                                      \
  MINIDL_ARG(int64_t, hidden_size);                                                        \
  /* Stacked layers; layer k > 0 reads layer k - 1's output sequence. */                   \
  MINIDL_ARG(int64_t, num_layers) = 1;                                                     \
  /* Whether each layer learns bias_ih and bias_hh. */                                     \
  MINIDL_ARG(bool, bias) = true;                                                           \
  /* Input and output [N, L, features] instead of [L, N, features]; the states stay */     \
  /* [num_layers * num_directions, N, features], as in PyTorch. */                         \
  MINIDL_ARG(bool, batch_first) = false;                                                   \
  /* Dropout on the output of every layer but the last, in training only; in [0, 1]. */    \
  MINIDL_ARG(double, dropout) = 0.0;                                                       \
  /* A second pass per layer over the reversed sequence, its output concatenated to the */ \
  /* forward pass's. */                                                                    \
  MINIDL_ARG(bool, bidirectional) = false

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  MINIDL_RNN_OPTIONS_FIELDS;
  MINIDL_ARG(RNNNonlinearity, nonlinearity) = RNNNonlinearity::Tanh;
};

struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  MINIDL_RNN_OPTIONS_FIELDS;
  // > 0: each step's h is projected to proj_size features by weight_hr_l{k} (PyTorch's LSTM
  // with projections); must be below hidden_size.
  MINIDL_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  MINIDL_RNN_OPTIONS_FIELDS;
};

#undef MINIDL_RNN_OPTIONS_FIELDS

// The cells: one time step, input [N, input_size] or unbatched [input_size].
#define MINIDL_RNN_CELL_OPTIONS_FIELDS               \
  MINIDL_ARG(int64_t, input_size);                   \
  MINIDL_ARG(int64_t, hidden_size);                  \
  /* Whether the cell learns bias_ih and bias_hh. */ \
  MINIDL_ARG(bool, bias) = true

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  MINIDL_RNN_CELL_OPTIONS_FIELDS;
  MINIDL_ARG(RNNNonlinearity, nonlinearity) = RNNNonlinearity::Tanh;
};

struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  MINIDL_RNN_CELL_OPTIONS_FIELDS;
};

struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  MINIDL_RNN_CELL_OPTIONS_FIELDS;
};

#undef MINIDL_RNN_CELL_OPTIONS_FIELDS

}  // namespace minidl::nn
