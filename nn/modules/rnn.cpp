#include "minidl/nn/modules/rnn.h"

#include <cmath>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/nn/init.h"
#include "minidl/ops/dropout.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/shape.h"

namespace minidl::nn {

namespace {

using detail::RecurrentKind;
using detail::RecurrentLayerWeights;
using detail::RecurrentSpec;

// Gates per step: the rows of weight_ih and weight_hh are G blocks of hidden_size.
int64_t gate_count(RecurrentKind kind) {
  switch (kind) {
    case RecurrentKind::RNNTanh:
    case RecurrentKind::RNNReLU: return 1;
    case RecurrentKind::LSTM: return 4;
    case RecurrentKind::GRU: return 3;
  }
  return 1;
}

const char* bool_text(bool value) { return value ? "true" : "false"; }

const char* nonlinearity_text(RNNNonlinearity nonlinearity) {
  return nonlinearity == RNNNonlinearity::Tanh ? "tanh" : "relu";
}

// ---- one time step (shared by the sequence modules and the cells) ----
// `input_gates` is W_ih x_t + b_ih for the step, [N, G * hidden]; the states are [N, ...].

Tensor rnn_step(const Tensor& input_gates, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh,
                bool relu) {
  const Tensor pre_activation = input_gates + linear(h, w_hh, b_hh);
  return relu ? minidl::relu(pre_activation) : minidl::tanh(pre_activation);
}

// Returns (h', c'), h' projected by w_hr when it is defined.
std::pair<Tensor, Tensor> lstm_step(const Tensor& input_gates, const Tensor& h, const Tensor& c,
                                    const Tensor& w_hh, const Tensor& b_hh, const Tensor& w_hr) {
  const std::vector<Tensor> gates = chunk(input_gates + linear(h, w_hh, b_hh), 4, 1);
  const Tensor input_gate = sigmoid(gates[0]), forget_gate = sigmoid(gates[1]);
  const Tensor cell_candidate = minidl::tanh(gates[2]), output_gate = sigmoid(gates[3]);
  Tensor next_c = forget_gate * c + input_gate * cell_candidate;
  Tensor next_h = output_gate * minidl::tanh(next_c);
  if (w_hr.defined()) next_h = linear(next_h, w_hr);
  return {std::move(next_h), std::move(next_c)};
}

// PyTorch's GRU: the reset gate scales W_hn h + b_hn, not h.
Tensor gru_step(const Tensor& input_gates, const Tensor& h, const Tensor& w_hh,
                const Tensor& b_hh) {
  const std::vector<Tensor> x_parts = chunk(input_gates, 3, 1);
  const std::vector<Tensor> h_parts = chunk(linear(h, w_hh, b_hh), 3, 1);
  const Tensor reset_gate = sigmoid(x_parts[0] + h_parts[0]);
  const Tensor update_gate = sigmoid(x_parts[1] + h_parts[1]);
  const Tensor candidate = minidl::tanh(x_parts[2] + reset_gate * h_parts[2]);
  // (1 - z) * n + z * h, written as PyTorch computes it.
  return candidate + update_gate * (h - candidate);
}

// One layer in one direction over the whole sequence: `input` [L, N, features], states [N, ...].
// Returns the outputs [L, N, out_features] and the final (h, c) (c undefined but for LSTM).
struct LayerPass {
  Tensor output, h, c;
};

LayerPass run_layer(RecurrentKind kind, const Tensor& input, Tensor h, Tensor c,
                    const RecurrentLayerWeights& w, bool reverse) {
  const int64_t steps = input.size(0);
  // Every step's input projection in one matrix product: [L, N, G * hidden].
  const Tensor input_gates = linear(input, w.w_ih, w.b_ih);
  std::vector<Tensor> outputs(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = reverse ? steps - 1 - i : i;
    const Tensor step_gates = input_gates.select(0, t);
    switch (kind) {
      case RecurrentKind::RNNTanh:
      case RecurrentKind::RNNReLU:
        h = rnn_step(step_gates, h, w.w_hh, w.b_hh, kind == RecurrentKind::RNNReLU);
        break;
      case RecurrentKind::LSTM:
        std::tie(h, c) = lstm_step(step_gates, h, c, w.w_hh, w.b_hh, w.w_hr);
        break;
      case RecurrentKind::GRU: h = gru_step(step_gates, h, w.w_hh, w.b_hh); break;
    }
    outputs[static_cast<size_t>(t)] = h;
  }
  return {stack(outputs, 0), std::move(h), std::move(c)};
}

// Checks that `input` suits `weight` and returns the dtype the steps run in: the parameters',
// or under autocast (float32 parameters, float32 or autocast-dtype input) the autocast dtype,
// in which input, states and outputs then are, as PyTorch's cuDNN RNN under autocast.
DType step_dtype(const std::string& module, const Tensor& input, const Tensor& weight) {
  MINIDL_CHECK(input.device() == weight.device(), module,
               ": expected input on the parameters' device (", weight.device(), "), got ",
               input.device());
  if (amp::is_autocast_enabled() && weight.dtype() == kFloat32 &&
      (input.dtype() == kFloat32 || input.dtype() == amp::autocast_dtype()))
    return amp::autocast_dtype();
  MINIDL_CHECK(input.dtype() == weight.dtype(), module,
               ": expected input of the parameters' dtype (", weight.dtype(), "), got ",
               input.dtype());
  return weight.dtype();
}

std::string layer_suffix(int64_t layer, int64_t direction) {
  return "_l" + std::to_string(layer) + (direction == 1 ? "_reverse" : "");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RNN, LSTM and GRU

RNNImplBase::RNNImplBase(const char* name, const RecurrentSpec& spec) : Module(name), spec_(spec) {
  MINIDL_CHECK(spec.input_size > 0 && spec.hidden_size > 0, name,
               ": expected positive input_size and hidden_size, got ", spec.input_size, " and ",
               spec.hidden_size);
  MINIDL_CHECK(spec.num_layers > 0, name, ": expected a positive num_layers, got ",
               spec.num_layers);
  MINIDL_CHECK(spec.dropout >= 0 && spec.dropout <= 1, name,
               ": expected dropout (a probability) in [0, 1], got ", spec.dropout);
  MINIDL_CHECK(spec.proj_size >= 0 && spec.proj_size < spec.hidden_size, name,
               ": expected proj_size in [0, hidden_size) = [0, ", spec.hidden_size, "), got ",
               spec.proj_size);
  const int64_t gate_rows = gate_count(spec.kind) * spec.hidden_size;
  for (int64_t layer = 0; layer < spec.num_layers; ++layer) {
    const int64_t layer_input = layer == 0 ? spec.input_size : num_directions() * out_features();
    for (int64_t direction = 0; direction < num_directions(); ++direction) {
      const std::string suffix = layer_suffix(layer, direction);
      RecurrentLayerWeights w;
      w.w_ih = register_parameter("weight_ih" + suffix, empty({gate_rows, layer_input}));
      w.w_hh = register_parameter("weight_hh" + suffix, empty({gate_rows, out_features()}));
      if (spec.bias) {
        w.b_ih = register_parameter("bias_ih" + suffix, empty({gate_rows}));
        w.b_hh = register_parameter("bias_hh" + suffix, empty({gate_rows}));
      }
      if (spec.proj_size > 0)
        w.w_hr =
            register_parameter("weight_hr" + suffix, empty({spec.proj_size, spec.hidden_size}));
      layers_.push_back(std::move(w));
    }
  }
  reset_parameters();
}

int64_t RNNImplBase::out_features() const {
  return spec_.proj_size > 0 ? spec_.proj_size : spec_.hidden_size;
}

void RNNImplBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(spec_.hidden_size));
  for (Tensor& weight : all_weights()) init::uniform_(weight, -bound, bound);
}

std::vector<Tensor> RNNImplBase::all_weights() const {
  std::vector<Tensor> weights;
  for (const RecurrentLayerWeights& w : layers_)
    for (const Tensor& t : {w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.w_hr})
      if (t.defined()) weights.push_back(t);
  return weights;
}

bool RNNImplBase::is_cuda_graph_safe() const { return spec_.dropout == 0 || spec_.num_layers == 1; }

RNNImplBase::Result RNNImplBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  check_defined(input, name().c_str(), "input");
  MINIDL_CHECK(input.dim() == 2 || input.dim() == 3, name(),
               ": expected input of 3 dimensions ([L, N, input_size], or [N, L, input_size] with "
               "batch_first) or 2 (unbatched [L, input_size]), got ",
               input.sizes());
  MINIDL_CHECK(input.size(-1) == spec_.input_size, name(), ": expected input with input_size (",
               spec_.input_size, ") features in its last dimension, got ", input.sizes());
  const DType dtype = step_dtype(name(), input, layers_.front().w_ih);
  const bool unbatched = input.dim() == 2;
  // [L, N, input_size] whatever the layout, in the steps' dtype.
  Tensor sequence =
      unbatched ? input.unsqueeze(1) : (spec_.batch_first ? input.transpose(0, 1) : input);
  if (sequence.dtype() != dtype) sequence = sequence.to(dtype);
  const int64_t steps = sequence.size(0), batch = sequence.size(1);
  MINIDL_CHECK(steps > 0, name(), ": expected a sequence of at least one step, got input ",
               input.sizes());

  const bool is_lstm = spec_.kind == RecurrentKind::LSTM;
  const int64_t state_count = spec_.num_layers * num_directions();
  auto initial_state = [&](const Tensor& given, const char* what, int64_t features,
                           const char* features_name) {
    // Unbatched input (N = 1 in `sequence`) takes states without N.
    if (!given.defined()) return zeros({state_count, batch, features}, sequence.options());
    const Shape expected =
        unbatched ? Shape{state_count, features} : Shape{state_count, batch, features};
    MINIDL_CHECK(given.sizes() == expected, name(), ": expected ", what, " of shape ", expected,
                 " (num_layers * num_directions", unbatched ? "" : ", N", ", ", features_name,
                 "), got ", given.sizes());
    MINIDL_CHECK(given.dtype() == input.dtype() && given.device() == input.device(), name(),
                 ": expected ", what, " of the input's dtype and device (", input.dtype(), " on ",
                 input.device(), "), got ", given.dtype(), " on ", given.device());
    const Tensor state = given.dtype() == dtype ? given : given.to(dtype);
    return unbatched ? state.unsqueeze(1) : state;
  };
  const Tensor h_initial =
      initial_state(h0, "h0", out_features(), spec_.proj_size > 0 ? "proj_size" : "hidden_size");
  const Tensor c_initial =
      is_lstm ? initial_state(c0, "c0", spec_.hidden_size, "hidden_size") : Tensor();

  const bool apply_dropout = is_training() && spec_.dropout > 0;
  std::vector<Tensor> h_final, c_final;
  for (int64_t layer = 0; layer < spec_.num_layers; ++layer) {
    std::vector<Tensor> direction_outputs;
    for (int64_t direction = 0; direction < num_directions(); ++direction) {
      const int64_t index = layer * num_directions() + direction;
      LayerPass pass = run_layer(spec_.kind, sequence, h_initial.select(0, index),
                                 is_lstm ? c_initial.select(0, index) : Tensor(),
                                 layers_[static_cast<size_t>(index)], direction == 1);
      direction_outputs.push_back(std::move(pass.output));
      h_final.push_back(std::move(pass.h));
      if (is_lstm) c_final.push_back(std::move(pass.c));
    }
    sequence = direction_outputs.size() == 1 ? direction_outputs[0] : cat(direction_outputs, 2);
    // Between layers only, as PyTorch: the last layer's output is returned as it is.
    if (apply_dropout && layer + 1 < spec_.num_layers)
      sequence = minidl::dropout(sequence, spec_.dropout, true);
  }

  Result result{sequence, stack(h_final, 0), is_lstm ? stack(c_final, 0) : Tensor()};
  if (unbatched) {
    result.output = result.output.squeeze(1);
    result.h_n = result.h_n.squeeze(1);
    if (is_lstm) result.c_n = result.c_n.squeeze(1);
  } else if (spec_.batch_first) {
    result.output = result.output.transpose(0, 1);
  }
  return result;
}

void RNNImplBase::pretty_print(std::ostream& out) const {
  out << name() << "(input_size=" << spec_.input_size << ", hidden_size=" << spec_.hidden_size
      << ", num_layers=" << spec_.num_layers << ", bias=" << bool_text(spec_.bias)
      << ", batch_first=" << bool_text(spec_.batch_first) << ", dropout=" << spec_.dropout
      << ", bidirectional=" << bool_text(spec_.bidirectional);
  if (spec_.kind == RecurrentKind::RNNReLU) out << ", nonlinearity=relu";
  if (spec_.proj_size > 0) out << ", proj_size=" << spec_.proj_size;
  out << ")";
}

namespace {

template <class Options>
RecurrentSpec spec_of(RecurrentKind kind, const Options& options, int64_t proj_size = 0) {
  return RecurrentSpec{.kind = kind,
                       .input_size = options.input_size(),
                       .hidden_size = options.hidden_size(),
                       .num_layers = options.num_layers(),
                       .bias = options.bias(),
                       .batch_first = options.batch_first(),
                       .dropout = options.dropout(),
                       .bidirectional = options.bidirectional(),
                       .proj_size = proj_size};
}

}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options)
    : RNNImplBase("RNN",
                  spec_of(options.nonlinearity() == RNNNonlinearity::ReLU ? RecurrentKind::RNNReLU
                                                                          : RecurrentKind::RNNTanh,
                          options)),
      options(options) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& hx) {
  Result result = run(input, hx, Tensor());
  return {std::move(result.output), std::move(result.h_n)};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options)
    : RNNImplBase("LSTM", spec_of(RecurrentKind::LSTM, options, options.proj_size())),
      options(options) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(
    const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx) {
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  MINIDL_CHECK(h0.defined() == c0.defined(),
               "LSTM: expected the state (h0, c0) with both tensors defined or neither, got h0 ",
               h0.defined() ? "defined" : "undefined", " and c0 ",
               c0.defined() ? "defined" : "undefined");
  Result result = run(input, h0, c0);
  return std::make_tuple(std::move(result.output),
                         std::make_tuple(std::move(result.h_n), std::move(result.c_n)));
}

GRUImpl::GRUImpl(const GRUOptions& options)
    : RNNImplBase("GRU", spec_of(RecurrentKind::GRU, options)), options(options) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& hx) {
  Result result = run(input, hx, Tensor());
  return {std::move(result.output), std::move(result.h_n)};
}

// ---------------------------------------------------------------------------------------------
// The cells

RNNCellImplBase::RNNCellImplBase(const char* name, int64_t input_size, int64_t hidden_size,
                                 bool bias, int64_t gates, std::string extra_repr)
    : Module(name),
      input_size_(input_size),
      hidden_size_(hidden_size),
      bias_(bias),
      extra_repr_(std::move(extra_repr)) {
  MINIDL_CHECK(input_size > 0 && hidden_size > 0, name,
               ": expected positive input_size and hidden_size, got ", input_size, " and ",
               hidden_size);
  weight_ih = register_parameter("weight_ih", empty({gates * hidden_size, input_size}));
  weight_hh = register_parameter("weight_hh", empty({gates * hidden_size, hidden_size}));
  if (bias) {
    bias_ih = register_parameter("bias_ih", empty({gates * hidden_size}));
    bias_hh = register_parameter("bias_hh", empty({gates * hidden_size}));
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size_));
  for (Tensor& weight : parameters(false)) init::uniform_(weight, -bound, bound);
}

Tensor RNNCellImplBase::batched_input(const Tensor& input) const {
  check_defined(input, name().c_str(), "input");
  MINIDL_CHECK(input.dim() == 1 || input.dim() == 2, name(),
               ": expected input of 2 dimensions ([N, input_size]) or 1 (unbatched "
               "[input_size]), got ",
               input.sizes());
  MINIDL_CHECK(input.size(-1) == input_size_, name(), ": expected input with input_size (",
               input_size_, ") features in its last dimension, got ", input.sizes());
  const DType dtype = step_dtype(name(), input, weight_ih);
  const Tensor x = input.dim() == 1 ? input.unsqueeze(0) : input;
  return x.dtype() == dtype ? x : x.to(dtype);
}

Tensor RNNCellImplBase::batched_state(const Tensor& state, const char* what, const Tensor& input,
                                      const Tensor& x) const {
  const bool unbatched = input.dim() == 1;
  const int64_t batch = x.size(0);
  if (!state.defined()) return zeros({batch, hidden_size_}, x.options());
  const Shape expected = unbatched ? Shape{hidden_size_} : Shape{batch, hidden_size_};
  MINIDL_CHECK(state.sizes() == expected, name(), ": expected ", what, " of shape ", expected,
               unbatched ? " (hidden_size) for unbatched input" : " (N, hidden_size)", ", got ",
               state.sizes());
  MINIDL_CHECK(state.dtype() == input.dtype() && state.device() == input.device(), name(),
               ": expected ", what, " of the input's dtype and device (", input.dtype(), " on ",
               input.device(), "), got ", state.dtype(), " on ", state.device());
  const Tensor batched = unbatched ? state.unsqueeze(0) : state;
  return batched.dtype() == x.dtype() ? batched : batched.to(x.dtype());
}

void RNNCellImplBase::pretty_print(std::ostream& out) const {
  out << name() << "(input_size=" << input_size_ << ", hidden_size=" << hidden_size_
      << ", bias=" << bool_text(bias_) << extra_repr_ << ")";
}

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options)
    : RNNCellImplBase("RNNCell", options.input_size(), options.hidden_size(), options.bias(), 1,
                      std::string(", nonlinearity=") + nonlinearity_text(options.nonlinearity())),
      options(options) {}

Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx) {
  const Tensor x = batched_input(input);
  const Tensor h = batched_state(hx, "hx", input, x);
  const Tensor next_h = rnn_step(linear(x, weight_ih, bias_ih), h, weight_hh, bias_hh,
                                 options.nonlinearity() == RNNNonlinearity::ReLU);
  return input.dim() == 1 ? next_h.squeeze(0) : next_h;
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options)
    : RNNCellImplBase("LSTMCell", options.input_size(), options.hidden_size(), options.bias(), 4),
      options(options) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(
    const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx) {
  Tensor h0, c0;
  if (hx) std::tie(h0, c0) = *hx;
  MINIDL_CHECK(h0.defined() == c0.defined(),
               "LSTMCell: expected the state (h, c) with both tensors defined or neither, got h ",
               h0.defined() ? "defined" : "undefined", " and c ",
               c0.defined() ? "defined" : "undefined");
  const Tensor x = batched_input(input);
  const bool unbatched = input.dim() == 1;
  const Tensor h = batched_state(h0, "h", input, x);
  const Tensor c = batched_state(c0, "c", input, x);
  auto [next_h, next_c] =
      lstm_step(linear(x, weight_ih, bias_ih), h, c, weight_hh, bias_hh, Tensor());
  if (unbatched) return {next_h.squeeze(0), next_c.squeeze(0)};
  return {next_h, next_c};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options)
    : RNNCellImplBase("GRUCell", options.input_size(), options.hidden_size(), options.bias(), 3),
      options(options) {}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) {
  const Tensor x = batched_input(input);
  const Tensor h = batched_state(hx, "hx", input, x);
  const Tensor next_h = gru_step(linear(x, weight_ih, bias_ih), h, weight_hh, bias_hh);
  return input.dim() == 1 ? next_h.squeeze(0) : next_h;
}

}  // namespace minidl::nn
