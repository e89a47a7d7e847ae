#pragma once
// The recurrent modules, as torch::nn's: nn::RNN (Elman, tanh or ReLU), nn::LSTM and nn::GRU
// over whole sequences, and nn::RNNCell, nn::LSTMCell and nn::GRUCell for one time step.
//
// Per layer k and direction (suffix "" forward, "_reverse" backward), PyTorch's state_dict
// names, shapes and order, G = 1 (RNN), 4 (LSTM: gates i, f, g, o) or 3 (GRU: r, z, n):
//   weight_ih_l{k}{suffix} [G * hidden, input_size (k = 0) or num_directions * out_features]
//   weight_hh_l{k}{suffix} [G * hidden, out_features]
//   bias_ih_l{k}{suffix}, bias_hh_l{k}{suffix} [G * hidden] (absent with .bias(false))
//   weight_hr_l{k}{suffix} [proj_size, hidden] (an LSTM with proj_size > 0 only)
// where out_features is proj_size when set, else hidden_size. The cells name theirs weight_ih,
// weight_hh, bias_ih and bias_hh. Every parameter starts uniform on
// [-1/sqrt(hidden_size), 1/sqrt(hidden_size)], as PyTorch's, so a state_dict saved by PyTorch
// (safetensors) loads with nn::load.
//
// One step of a layer, with x_t the step's input and h, c the previous state:
//   RNN:  h' = tanh or relu(W_ih x_t + b_ih + W_hh h + b_hh)
//   LSTM: i, f, g, o = the four chunks of W_ih x_t + b_ih + W_hh h + b_hh;
//         c' = sigmoid(f) * c + sigmoid(i) * tanh(g);  h' = sigmoid(o) * tanh(c')  (then W_hr h')
//   GRU:  r, z = sigmoid of the first two chunks of W_ih x_t + b_ih + W_hh h + b_hh;
//         n = tanh(x-chunk 3 + r * (h-chunk 3));  h' = (1 - z) * n + z * h
// The input projections of all steps are one matrix product per layer and direction; the steps
// are differentiable ops (linear, sigmoid, tanh, mul, add), so both backends and autograd run
// them. Under autocast (float32 parameters), input, states and outputs are in the autocast
// dtype, as PyTorch's cuDNN RNN under autocast.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/rnn.h"

namespace minidl::nn {

namespace detail {

enum class RecurrentKind { RNNTanh, RNNReLU, LSTM, GRU };

// The options of RNN, LSTM and GRU in one form for the shared implementation.
struct RecurrentSpec {
  RecurrentKind kind;
  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  double dropout;
  bool bidirectional;
  int64_t proj_size;  // LSTM only; 0 = none
};

// The parameters of one layer in one direction (b_ih, b_hh and w_hr may be undefined).
struct RecurrentLayerWeights {
  Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
};

}  // namespace detail

// The layers, the state checks and the loop over layers, directions and steps that RNN, LSTM
// and GRU share (LibTorch's RNNImplBase).
class RNNImplBase : public Module {
 public:
  // Draws every parameter again, uniform on +-1/sqrt(hidden_size).
  void reset_parameters();
  // Every parameter in PyTorch's order: per layer, per direction, w_ih, w_hh, b_ih, b_hh
  // (, w_hr), as LibTorch's all_weights().
  std::vector<Tensor> all_weights() const;
  void pretty_print(std::ostream& out) const override;
  // Dropout between layers draws a mask each step, which a replay would repeat.
  bool is_cuda_graph_safe() const override;

 protected:
  RNNImplBase(const char* name, const detail::RecurrentSpec& spec);

  // output, h_n and (LSTM) c_n for `input` and the initial states (undefined: zeros), with
  // every shape checked. The states are [num_layers * num_directions, N, features], or
  // [num_layers * num_directions, features] for unbatched input.
  struct Result {
    Tensor output, h_n, c_n;
  };
  Result run(const Tensor& input, const Tensor& h0, const Tensor& c0);

 private:
  int64_t num_directions() const { return spec_.bidirectional ? 2 : 1; }
  int64_t out_features() const;  // of one direction: proj_size, or hidden_size without it

  detail::RecurrentSpec spec_;
  std::vector<detail::RecurrentLayerWeights> layers_;  // index layer * num_directions + direction
};

class RNNImpl : public RNNImplBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  // input [L, N, input_size] ([N, L, input_size] with batch_first) or [L, input_size];
  // hx [num_layers * num_directions, N, hidden_size] (unbatched: without N), zeros when
  // undefined. Returns (output [L, N, num_directions * hidden_size], h_n like hx).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {});

  RNNOptions options;
};

class LSTMImpl : public RNNImplBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size)
      : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  // As RNN's, with the state (h_0, c_0): h_0 [num_layers * num_directions, N, out_features],
  // c_0 [num_layers * num_directions, N, hidden_size] (unbatched: without N), zeros when absent.
  // Returns (output [L, N, num_directions * out_features], (h_n, c_n)).
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(
      const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt);

  LSTMOptions options;
};

class GRUImpl : public RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  // As RNN's.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = {});

  GRUOptions options;
};

MINIDL_MODULE(RNN);
MINIDL_MODULE(LSTM);
MINIDL_MODULE(GRU);

// The parameters and checks the three cells share (LibTorch's RNNCellImplBase).
class RNNCellImplBase : public Module {
 public:
  // Draws every parameter again, uniform on +-1/sqrt(hidden_size).
  void reset_parameters();
  void pretty_print(std::ostream& out) const override;

  Tensor weight_ih;  // [G * hidden_size, input_size]
  Tensor weight_hh;  // [G * hidden_size, hidden_size]
  Tensor bias_ih;    // [G * hidden_size], undefined without bias
  Tensor bias_hh;    // [G * hidden_size], undefined without bias

 protected:
  // `gates`: G above; `extra_repr` ends the printed form (RNNCell's nonlinearity).
  RNNCellImplBase(const char* name, int64_t input_size, int64_t hidden_size, bool bias,
                  int64_t gates, std::string extra_repr = {});

  // The input as [N, input_size] (unbatched [input_size] gains N = 1), checked, in the dtype
  // the step runs in (the autocast dtype under autocast).
  Tensor batched_input(const Tensor& input) const;
  // The state `what` for the step on `x` (batched_input(input)): [N, hidden_size] in x's dtype,
  // zeros when undefined; checked against `input` (unbatched input takes [hidden_size]).
  Tensor batched_state(const Tensor& state, const char* what, const Tensor& input,
                       const Tensor& x) const;

 private:
  int64_t input_size_, hidden_size_;
  bool bias_;
  std::string extra_repr_;
};

class RNNCellImpl : public RNNCellImplBase {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size)
      : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  // input [N, input_size] or [input_size]; hx [N, hidden_size] or [hidden_size], zeros when
  // undefined. Returns h' like hx.
  Tensor forward(const Tensor& input, const Tensor& hx = {});

  RNNCellOptions options;
};

class LSTMCellImpl : public RNNCellImplBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size)
      : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  // As RNNCell's, with the state (h, c), zeros when absent. Returns (h', c').
  std::tuple<Tensor, Tensor> forward(
      const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt);

  LSTMCellOptions options;
};

class GRUCellImpl : public RNNCellImplBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size)
      : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  // As RNNCell's.
  Tensor forward(const Tensor& input, const Tensor& hx = {});

  GRUCellOptions options;
};

MINIDL_MODULE(RNNCell);
MINIDL_MODULE(LSTMCell);
MINIDL_MODULE(GRUCell);

}  // namespace minidl::nn
