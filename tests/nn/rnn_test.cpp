// nn::RNN, nn::LSTM, nn::GRU and their cells: outputs, final states and the gradients of the
// input, the initial state and every parameter against PyTorch's (tests/nn/rnn_reference.h, in
// float32 and float64), parameter names, shapes and initialisation, f64 gradient checks,
// dropout between layers in training only, state_dict round trips, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "minidl/core/autocast.h"
#include "minidl/core/autograd/grad_mode.h"
#include "minidl/core/autograd/gradcheck.h"
#include "minidl/nn/nn.h"
#include "minidl/ops/elementwise.h"
#include "minidl/ops/random.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"
#include "rnn_reference.h"
#include "scratch_directory.h"
#include "test_util.h"

namespace minidl {
namespace {

using testing::all_close;
using testing::RnnReference;
using testing::wiggly;

// What a recurrent module returns, in one form: (output, h_n, c_n), c_n undefined but for LSTM
// and LSTMCell; a cell's output is its h'.
struct RecurrentOutputs {
  Tensor output, h_n, c_n;
};

// A module of any of the six kinds behind one call: (input, h0, c0) -> outputs, where undefined
// states mean "not given".
struct RecurrentUnderTest {
  std::shared_ptr<nn::Module> module;
  std::function<RecurrentOutputs(const Tensor&, const Tensor&, const Tensor&)> run;
};

std::optional<std::tuple<Tensor, Tensor>> lstm_state(const Tensor& h0, const Tensor& c0) {
  if (!h0.defined()) return std::nullopt;
  return std::make_tuple(h0, c0);
}

RecurrentUnderTest make_recurrent(const RnnReference& ref) {
  const std::string kind = ref.module;
  const auto nonlinearity = std::string(ref.nonlinearity) == "relu" ? nn::RNNNonlinearity::ReLU
                                                                    : nn::RNNNonlinearity::Tanh;
  if (kind == "LSTM") {
    nn::LSTM lstm(nn::LSTMOptions(ref.input_size, ref.hidden_size)
                      .num_layers(ref.num_layers)
                      .bias(ref.bias)
                      .batch_first(ref.batch_first)
                      .bidirectional(ref.bidirectional)
                      .proj_size(ref.proj_size));
    return {lstm.ptr(), [lstm](const Tensor& x, const Tensor& h0, const Tensor& c0) {
              auto [out, state] = lstm->forward(x, lstm_state(h0, c0));
              return RecurrentOutputs{out, std::get<0>(state), std::get<1>(state)};
            }};
  }
  if (kind == "GRU") {
    nn::GRU gru(nn::GRUOptions(ref.input_size, ref.hidden_size)
                    .num_layers(ref.num_layers)
                    .bias(ref.bias)
                    .batch_first(ref.batch_first)
                    .bidirectional(ref.bidirectional));
    return {gru.ptr(), [gru](const Tensor& x, const Tensor& h0, const Tensor&) {
              auto [out, h_n] = gru->forward(x, h0);
              return RecurrentOutputs{out, h_n, Tensor()};
            }};
  }
  if (kind == "RNN") {
    nn::RNN rnn(nn::RNNOptions(ref.input_size, ref.hidden_size)
                    .num_layers(ref.num_layers)
                    .bias(ref.bias)
                    .batch_first(ref.batch_first)
                    .bidirectional(ref.bidirectional)
                    .nonlinearity(nonlinearity));
    return {rnn.ptr(), [rnn](const Tensor& x, const Tensor& h0, const Tensor&) {
              auto [out, h_n] = rnn->forward(x, h0);
              return RecurrentOutputs{out, h_n, Tensor()};
            }};
  }
  if (kind == "LSTMCell") {
    nn::LSTMCell cell(nn::LSTMCellOptions(ref.input_size, ref.hidden_size).bias(ref.bias));
    return {cell.ptr(), [cell](const Tensor& x, const Tensor& h0, const Tensor& c0) {
              auto [h, c] = cell->forward(x, lstm_state(h0, c0));
              return RecurrentOutputs{h, h, c};
            }};
  }
  if (kind == "GRUCell") {
    nn::GRUCell cell(nn::GRUCellOptions(ref.input_size, ref.hidden_size).bias(ref.bias));
    return {cell.ptr(), [cell](const Tensor& x, const Tensor& h0, const Tensor&) {
              const Tensor h = cell->forward(x, h0);
              return RecurrentOutputs{h, h, Tensor()};
            }};
  }
  nn::RNNCell cell(nn::RNNCellOptions(ref.input_size, ref.hidden_size)
                       .bias(ref.bias)
                       .nonlinearity(nonlinearity));
  return {cell.ptr(), [cell](const Tensor& x, const Tensor& h0, const Tensor&) {
            const Tensor h = cell->forward(x, h0);
            return RecurrentOutputs{h, h, Tensor()};
          }};
}

// The script's parameter values: parameter i of named_parameters() is wiggly, phase 10 + i,
// times 0.4.
void set_reference_parameters(nn::Module& module) {
  NoGradGuard no_grad;
  int64_t index = 0;
  for (const auto& item : module.named_parameters()) {
    Tensor parameter = item.value();
    parameter.copy_(wiggly(parameter.sizes(), 10.0 + static_cast<double>(index++), kFloat64)
                        .mul(0.4)
                        .to(parameter.dtype()));
  }
}

Tensor scaled_wiggly(const Shape& sizes, double phase, double scale, DType dtype) {
  return wiggly(sizes, phase, kFloat64).mul(scale).to(dtype);
}

Tensor reference_tensor(const std::vector<double>& values, const Shape& sizes) {
  return from_host(values.data(), sizes, kFloat64);
}

// The shapes the script gave the input and the states.
struct ReferenceShapes {
  Shape input, h, c;
};

ReferenceShapes reference_shapes(const RnnReference& ref) {
  const bool batched = ref.batch > 0;
  if (std::string(ref.module).ends_with("Cell")) {
    const Shape state = batched ? Shape{ref.batch, ref.hidden_size} : Shape{ref.hidden_size};
    return {batched ? Shape{ref.batch, ref.input_size} : Shape{ref.input_size}, state, state};
  }
  const int64_t states = ref.num_layers * (ref.bidirectional ? 2 : 1);
  const int64_t out_features = ref.proj_size > 0 ? ref.proj_size : ref.hidden_size;
  Shape input = {ref.length, ref.input_size};
  if (batched)
    input = ref.batch_first ? Shape{ref.batch, ref.length, ref.input_size}
                            : Shape{ref.length, ref.batch, ref.input_size};
  return {input, batched ? Shape{states, ref.batch, out_features} : Shape{states, out_features},
          batched ? Shape{states, ref.batch, ref.hidden_size} : Shape{states, ref.hidden_size}};
}

TEST(Recurrent, MatchesPyTorchOutputsStatesAndGradients) {
  for (const RnnReference& ref : testing::kRnnReferences) {
    SCOPED_TRACE(ref.name);
    const DType dtype = std::string(ref.dtype) == "float64" ? kFloat64 : kFloat32;
    // float32: PyTorch and minidl round differently along the recurrence.
    const double atol = dtype == kFloat64 ? 1e-12 : 2e-6, rtol = dtype == kFloat64 ? 1e-10 : 1e-5;
    RecurrentUnderTest recurrent = make_recurrent(ref);
    recurrent.module->to(dtype);

    // PyTorch's names, shapes and order.
    std::vector<std::string> names;
    std::vector<Tensor> parameters;
    for (const auto& item : recurrent.module->named_parameters()) {
      names.push_back(item.key());
      parameters.push_back(item.value());
    }
    ASSERT_EQ(names, ref.parameter_names);
    for (size_t i = 0; i < parameters.size(); ++i)
      EXPECT_EQ(parameters[i].sizes(), Shape(ref.parameter_shapes[i])) << names[i];
    set_reference_parameters(*recurrent.module);

    const ReferenceShapes shapes = reference_shapes(ref);
    const Tensor x = wiggly(shapes.input, 0.0, dtype).requires_grad_();
    const Tensor h0 = scaled_wiggly(shapes.h, 1.0, 0.5, dtype).requires_grad_();
    const Tensor c0 = scaled_wiggly(shapes.c, 2.0, 0.5, dtype).requires_grad_();
    const bool is_lstm = std::string(ref.module).starts_with("LSTM");
    const bool is_cell = std::string(ref.module).ends_with("Cell");
    const RecurrentOutputs out = ref.with_state ? recurrent.run(x, h0, is_lstm ? c0 : Tensor())
                                                : recurrent.run(x, Tensor(), Tensor());

    const auto check = [&](const Tensor& actual, const std::vector<double>& expected,
                           const char* what) {
      ASSERT_TRUE(actual.defined()) << what;
      EXPECT_EQ(actual.dtype(), dtype) << what;
      EXPECT_TRUE(all_close(actual, reference_tensor(expected, actual.sizes()), atol, rtol))
          << what;
      EXPECT_EQ(actual.numel(), static_cast<int64_t>(expected.size())) << what;
    };
    check(out.output, ref.out, "output");
    check(out.h_n, ref.h_n, "h_n");
    if (is_lstm) check(out.c_n, ref.c_n, "c_n");

    // The script's loss: sum(out * up_out) + sum(h_n * up_h) (not for a cell, whose output is
    // h_n) + sum(c_n * up_c).
    Tensor loss = sum(out.output * wiggly(out.output.sizes(), 3.0, dtype));
    if (!is_cell) loss = loss + sum(out.h_n * wiggly(out.h_n.sizes(), 4.0, dtype));
    if (is_lstm) loss = loss + sum(out.c_n * wiggly(out.c_n.sizes(), 5.0, dtype));
    loss.backward();
    check(x.grad(), ref.grad_input, "grad input");
    if (ref.with_state) {
      check(h0.grad(), ref.grad_h0, "grad h0");
      if (is_lstm) check(c0.grad(), ref.grad_c0, "grad c0");
    }
    for (size_t i = 0; i < parameters.size(); ++i)
      check(parameters[i].grad(), ref.grad_parameters[i], names[i].c_str());
  }
}

TEST(Recurrent, InitialisationIsUniformOnInverseSqrtHidden) {
  manual_seed(5);
  nn::LSTM lstm(nn::LSTMOptions(10, 16).num_layers(2).bidirectional(true));
  nn::GRUCell cell(10, 16);
  const double bound = 1.0 / std::sqrt(16.0);
  for (const std::vector<Tensor>& parameters : {lstm->parameters(), cell->parameters()}) {
    for (const Tensor& parameter : parameters) {
      EXPECT_LE(max(abs(parameter)).item<float>(), bound);
      EXPECT_GT(max(abs(parameter)).item<float>(), 0.8 * bound);
    }
  }
  // all_weights() lists the parameters in PyTorch's order.
  const std::vector<Tensor> all = lstm->all_weights();
  const std::vector<Tensor> registered = lstm->parameters();
  ASSERT_EQ(all.size(), registered.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(all[i].is_same(registered[i]));
  // Drawn again, not zero.
  const Tensor before = lstm->all_weights()[0].clone();
  lstm->reset_parameters();
  EXPECT_FALSE(all_close(lstm->all_weights()[0], before, 1e-6, 0.0));
}

TEST(Recurrent, PrintsItsOptions) {
  auto printed = [](const auto& module) {
    std::ostringstream out;
    module->pretty_print(out);
    return out.str();
  };
  EXPECT_EQ(printed(nn::LSTM(nn::LSTMOptions(4, 6).num_layers(2).dropout(0.25).proj_size(3))),
            "LSTM(input_size=4, hidden_size=6, num_layers=2, bias=true, batch_first=false, "
            "dropout=0.25, bidirectional=false, proj_size=3)");
  EXPECT_EQ(printed(nn::GRU(nn::GRUOptions(4, 6).batch_first(true).bidirectional(true))),
            "GRU(input_size=4, hidden_size=6, num_layers=1, bias=true, batch_first=true, "
            "dropout=0, bidirectional=true)");
  EXPECT_EQ(printed(nn::RNN(nn::RNNOptions(4, 6).nonlinearity(nn::RNNNonlinearity::ReLU))),
            "RNN(input_size=4, hidden_size=6, num_layers=1, bias=true, batch_first=false, "
            "dropout=0, bidirectional=false, nonlinearity=relu)");
  EXPECT_EQ(printed(nn::LSTMCell(nn::LSTMCellOptions(4, 6).bias(false))),
            "LSTMCell(input_size=4, hidden_size=6, bias=false)");
  EXPECT_EQ(printed(nn::RNNCell(4, 6)),
            "RNNCell(input_size=4, hidden_size=6, bias=true, nonlinearity=tanh)");
}

// Small f64 modules: the input and the initial state (and so every step's backward) against
// central differences.
TEST(Recurrent, GradcheckLstmThroughInputAndState) {
  manual_seed(11);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  lstm->to(kFloat64);
  const Tensor x = wiggly({3, 2, 3}, 0.0, kFloat64).requires_grad_();
  const Tensor h0 = scaled_wiggly({4, 2, 4}, 1.0, 0.5, kFloat64).requires_grad_();
  const Tensor c0 = scaled_wiggly({4, 2, 4}, 2.0, 0.5, kFloat64).requires_grad_();
  auto fn = [&](const std::vector<Tensor>& in) {
    auto [out, state] = lstm->forward(in[0], std::make_tuple(in[1], in[2]));
    return cat({out.flatten(), std::get<0>(state).flatten(), std::get<1>(state).flatten()}, 0);
  };
  const GradcheckResult result = gradcheck(fn, {x, h0, c0});
  EXPECT_TRUE(result) << result.message;
}

TEST(Recurrent, GradcheckGruThroughInputAndState) {
  manual_seed(12);
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  gru->to(kFloat64);
  const Tensor x = wiggly({2, 3, 3}, 0.0, kFloat64).requires_grad_();
  const Tensor h0 = scaled_wiggly({4, 2, 4}, 1.0, 0.5, kFloat64).requires_grad_();
  auto fn = [&](const std::vector<Tensor>& in) {
    auto [out, h_n] = gru->forward(in[0], in[1]);
    return cat({out.flatten(), h_n.flatten()}, 0);
  };
  const GradcheckResult result = gradcheck(fn, {x, h0});
  EXPECT_TRUE(result) << result.message;
}

TEST(Recurrent, GradcheckCellsAndProjection) {
  manual_seed(13);
  nn::LSTM projected(nn::LSTMOptions(3, 4).proj_size(2));
  nn::LSTMCell lstm_cell(3, 4);
  nn::GRUCell gru_cell(3, 4);
  nn::RNNCell rnn_cell(3, 4);
  for (nn::Module* module :
       std::vector<nn::Module*>{projected.get(), lstm_cell.get(), gru_cell.get(), rnn_cell.get()})
    module->to(kFloat64);
  const Tensor sequence = wiggly({3, 2, 3}, 0.0, kFloat64).requires_grad_();
  const Tensor x = wiggly({2, 3}, 0.0, kFloat64).requires_grad_();
  const Tensor h = scaled_wiggly({2, 4}, 1.0, 0.5, kFloat64).requires_grad_();
  const Tensor c = scaled_wiggly({2, 4}, 2.0, 0.5, kFloat64).requires_grad_();
  const GradcheckResult projection = gradcheck(
      [&](const std::vector<Tensor>& in) { return std::get<0>(projected->forward(in[0])); },
      {sequence});
  EXPECT_TRUE(projection) << projection.message;
  const GradcheckResult lstm = gradcheck(
      [&](const std::vector<Tensor>& in) {
        auto [next_h, next_c] = lstm_cell->forward(in[0], std::make_tuple(in[1], in[2]));
        return cat({next_h, next_c}, 1);
      },
      {x, h, c});
  EXPECT_TRUE(lstm) << lstm.message;
  const GradcheckResult gru = gradcheck(
      [&](const std::vector<Tensor>& in) { return gru_cell->forward(in[0], in[1]); }, {x, h});
  EXPECT_TRUE(gru) << gru.message;
  const GradcheckResult rnn = gradcheck(
      [&](const std::vector<Tensor>& in) { return rnn_cell->forward(in[0], in[1]); }, {x, h});
  EXPECT_TRUE(rnn) << rnn.message;
}

// The zero state is what an absent one means; unbatched input is batch 1 without the dim.
TEST(Recurrent, AbsentStateIsZerosAndUnbatchedIsBatchOne) {
  manual_seed(14);
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2));
  const Tensor x = wiggly({5, 1, 4});
  auto [out, state] = lstm->forward(x);
  auto [out_zero, state_zero] =
      lstm->forward(x, std::make_tuple(zeros({2, 1, 6}), zeros({2, 1, 6})));
  EXPECT_TRUE(testing::bitwise_equal(out, out_zero));
  EXPECT_TRUE(testing::bitwise_equal(std::get<1>(state), std::get<1>(state_zero)));
  auto [unbatched, unbatched_state] = lstm->forward(x.squeeze(1));
  EXPECT_EQ(unbatched.sizes(), (Shape{5, 6}));
  EXPECT_EQ(std::get<0>(unbatched_state).sizes(), (Shape{2, 6}));
  EXPECT_TRUE(all_close(unbatched, out.squeeze(1), 1e-6));

  nn::GRUCell cell(4, 6);
  EXPECT_TRUE(testing::bitwise_equal(cell->forward(x[0]), cell->forward(x[0], zeros({1, 6}))));
  EXPECT_EQ(cell->forward(x[0][0]).sizes(), (Shape{6}));

  // Called through the holder, as LibTorch's modules are.
  auto [called, called_state] = lstm(x);
  EXPECT_TRUE(testing::bitwise_equal(called, out));
  EXPECT_TRUE(testing::bitwise_equal(cell(x[0]), cell->forward(x[0])));
}

// Under autocast the steps run in the 16-bit dtype (input, states and outputs), as PyTorch's
// cuDNN path; the float32 parameters get float32 gradients.
TEST(Recurrent, AutocastRunsInSixteenBits) {
  manual_seed(17);
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true));
  nn::GRUCell cell(4, 6);
  const Tensor x = wiggly({5, 3, 4});
  auto [expected, expected_state] = lstm->forward(x);
  const Tensor expected_cell = cell->forward(x[0]);
  amp::AutocastGuard autocast(kBFloat16);
  auto [out, state] = lstm->forward(x, std::make_tuple(zeros({4, 3, 6}), zeros({4, 3, 6})));
  EXPECT_EQ(out.dtype(), kBFloat16);
  EXPECT_EQ(std::get<1>(state).dtype(), kBFloat16);
  EXPECT_TRUE(all_close(out, expected, 3e-2, 3e-2));
  EXPECT_TRUE(all_close(std::get<1>(state), std::get<1>(expected_state), 3e-2, 3e-2));
  const Tensor cell_out = cell->forward(x[0], zeros({3, 6}));
  EXPECT_EQ(cell_out.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(cell_out, expected_cell, 3e-2, 3e-2));
  sum(out.to(kFloat32)).backward();
  EXPECT_EQ(lstm->all_weights()[0].grad().dtype(), kFloat32);
}

TEST(Recurrent, DropoutBetweenLayersInTrainingOnly) {
  manual_seed(15);
  nn::GRU with_dropout(nn::GRUOptions(4, 6).num_layers(3).dropout(0.5));
  nn::GRU without_dropout(nn::GRUOptions(4, 6).num_layers(3));
  without_dropout->load_state_dict(with_dropout->state_dict());
  EXPECT_FALSE(with_dropout->is_cuda_graph_safe());
  EXPECT_TRUE(without_dropout->is_cuda_graph_safe());
  // One layer has nothing to drop between (PyTorch only warns), so it stays graph-safe.
  EXPECT_TRUE(nn::LSTM(nn::LSTMOptions(4, 6).dropout(0.5))->is_cuda_graph_safe());

  const Tensor x = wiggly({5, 3, 4});
  const Tensor reference = std::get<0>(without_dropout->forward(x));
  manual_seed(1);
  const Tensor first = std::get<0>(with_dropout->forward(x));
  const Tensor second = std::get<0>(with_dropout->forward(x));
  EXPECT_FALSE(all_close(first, second, 1e-4, 1e-4));  // two masks
  EXPECT_FALSE(all_close(first, reference, 1e-4, 1e-4));
  manual_seed(1);
  EXPECT_TRUE(testing::bitwise_equal(std::get<0>(with_dropout->forward(x)), first));  // the seed

  with_dropout->eval();
  EXPECT_TRUE(testing::bitwise_equal(std::get<0>(with_dropout->forward(x)), reference));

  // dropout = 1 drops every input of the last layer: its output depends on the biases only.
  nn::RNN all_dropped(nn::RNNOptions(4, 6).num_layers(2).dropout(1.0));
  const Tensor dropped = std::get<0>(all_dropped->forward(x));
  const Tensor other = std::get<0>(all_dropped->forward(wiggly({5, 3, 4}, 2.0)));
  EXPECT_TRUE(all_close(dropped, other, 1e-6));
}

// A state_dict with PyTorch's names (what nn::load reads from a file PyTorch saved) loads.
TEST(Recurrent, StateDictRoundTripsThroughSafetensors) {
  testing::ScratchDirectory scratch("rnn_");
  manual_seed(16);
  nn::LSTM saved(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).proj_size(3));
  nn::save(saved, scratch.file("lstm.safetensors"));
  nn::LSTM loaded(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).proj_size(3));
  nn::load(loaded, scratch.file("lstm.safetensors"));
  const Tensor x = wiggly({5, 3, 4});
  EXPECT_TRUE(
      testing::bitwise_equal(std::get<0>(saved->forward(x)), std::get<0>(loaded->forward(x))));
  // Another architecture's file names what is missing.
  nn::LSTM one_direction(nn::LSTMOptions(4, 6).num_layers(2).proj_size(3));
  EXPECT_ERROR_CONTAINS(nn::load(one_direction, scratch.file("lstm.safetensors")),
                        "weight_ih_l0_reverse");
}

// A file safetensors.torch.save_file wrote from a PyTorch LSTM's state_dict (PyTorch's own
// initialisation) loads strictly, and the LSTM then gives PyTorch's outputs.
TEST(Recurrent, LoadsAStateDictPyTorchSaved) {
  testing::ScratchDirectory scratch("rnn_");
  const std::filesystem::path path = scratch.file("pytorch_lstm.safetensors");
  {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(testing::kPyTorchLstmSafetensors.data()),
               static_cast<std::streamsize>(testing::kPyTorchLstmSafetensors.size()));
  }
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true).proj_size(2));
  nn::load(lstm, path);
  auto [out, state] = lstm->forward(wiggly({4, 2, 2}));
  const std::vector<double>& expected = testing::kPyTorchLstmOutputs;
  ASSERT_EQ(expected.size(), 32u + 16u + 24u);
  const auto part = [&](size_t offset, const Shape& sizes) {
    return from_host(expected.data() + offset, sizes, kFloat64);
  };
  EXPECT_TRUE(all_close(out, part(0, {4, 2, 4}), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(std::get<0>(state), part(32, {4, 2, 2}), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(std::get<1>(state), part(48, {4, 2, 3}), 1e-6, 1e-5));
}

TEST(Recurrent, OptionErrors) {
  EXPECT_ERROR_CONTAINS(nn::LSTM(nn::LSTMOptions(4, 6).dropout(1.5)),
                        "LSTM: expected dropout (a probability) in [0, 1], got 1.5");
  EXPECT_ERROR_CONTAINS(nn::GRU(nn::GRUOptions(4, 6).dropout(-0.1)),
                        "GRU: expected dropout (a probability) in [0, 1], got -0.1");
  EXPECT_ERROR_CONTAINS(nn::RNN(4, 0),
                        "RNN: expected positive input_size and hidden_size, got 4 and 0");
  EXPECT_ERROR_CONTAINS(nn::GRU(nn::GRUOptions(4, 6).num_layers(0)),
                        "GRU: expected a positive num_layers, got 0");
  EXPECT_ERROR_CONTAINS(nn::LSTM(nn::LSTMOptions(4, 6).proj_size(6)),
                        "LSTM: expected proj_size in [0, hidden_size) = [0, 6), got 6");
  EXPECT_ERROR_CONTAINS(nn::GRUCell(0, 6),
                        "GRUCell: expected positive input_size and hidden_size, got 0 and 6");
}

TEST(Recurrent, InputAndStateErrors) {
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true));
  const Tensor x = wiggly({5, 3, 4});
  EXPECT_ERROR_CONTAINS(lstm->forward(wiggly({5, 3, 2, 4})),
                        "LSTM: expected input of 3 dimensions ([L, N, input_size], or [N, L, "
                        "input_size] with batch_first) or 2 (unbatched [L, input_size]), got "
                        "[5, 3, 2, 4]");
  EXPECT_ERROR_CONTAINS(lstm->forward(wiggly({5, 3, 5})),
                        "LSTM: expected input with input_size (4) features in its last "
                        "dimension, got [5, 3, 5]");
  EXPECT_ERROR_CONTAINS(lstm->forward(x.to(kFloat64)),
                        "LSTM: expected input of the parameters' dtype (float32), got float64");
  EXPECT_ERROR_CONTAINS(
      lstm->forward(x, std::make_tuple(zeros({4, 3, 6}, kFloat64), zeros({4, 3, 6}, kFloat64))),
      "LSTM: expected h0 of the input's dtype and device (float32 on cpu), got "
      "float64 on cpu");
  EXPECT_ERROR_CONTAINS(
      lstm->forward(x, std::make_tuple(zeros({2, 3, 6}), zeros({4, 3, 6}))),
      "LSTM: expected h0 of shape [4, 3, 6] (num_layers * num_directions, N, hidden_size), "
      "got [2, 3, 6]");
  EXPECT_ERROR_CONTAINS(
      lstm->forward(x, std::make_tuple(zeros({4, 3, 6}), zeros({4, 6}))),
      "LSTM: expected c0 of shape [4, 3, 6] (num_layers * num_directions, N, hidden_size), "
      "got [4, 6]");
  EXPECT_ERROR_CONTAINS(lstm->forward(x, std::make_tuple(zeros({4, 3, 6}), Tensor())),
                        "LSTM: expected the state (h0, c0) with both tensors defined or neither");
  EXPECT_ERROR_CONTAINS(lstm->forward(x[0], std::make_tuple(zeros({4, 3, 6}), zeros({4, 3, 6}))),
                        "LSTM: expected h0 of shape [4, 6] (num_layers * num_directions, "
                        "hidden_size), got [4, 3, 6]");
  nn::LSTM projected(nn::LSTMOptions(4, 6).proj_size(2));
  EXPECT_ERROR_CONTAINS(
      projected->forward(x, std::make_tuple(zeros({1, 3, 6}), zeros({1, 3, 6}))),
      "LSTM: expected h0 of shape [1, 3, 2] (num_layers * num_directions, N, proj_size)");
  nn::GRU gru(nn::GRUOptions(4, 6).batch_first(true));
  // batch_first: x [5, 3, 4] is N = 5, and the state stays [num_layers, N, hidden_size].
  EXPECT_EQ(std::get<1>(gru->forward(x, zeros({1, 5, 6}))).sizes(), (Shape{1, 5, 6}));
  EXPECT_ERROR_CONTAINS(gru->forward(x, zeros({1, 3, 6})),
                        "GRU: expected h0 of shape [1, 5, 6] (num_layers * num_directions, N, "
                        "hidden_size), got [1, 3, 6]");
  EXPECT_ERROR_CONTAINS(gru->forward(Tensor()), "GRU: argument 'input' is an undefined tensor");
  EXPECT_ERROR_CONTAINS(nn::RNN(4, 6)->forward(wiggly({0, 3, 4})),
                        "RNN: expected a sequence of at least one step, got input [0, 3, 4]");

  nn::LSTMCell cell(4, 6);
  EXPECT_ERROR_CONTAINS(cell->forward(x),
                        "LSTMCell: expected input of 2 dimensions ([N, input_size]) or 1 "
                        "(unbatched [input_size]), got [5, 3, 4]");
  EXPECT_ERROR_CONTAINS(cell->forward(wiggly({3, 5})),
                        "LSTMCell: expected input with input_size (4) features in its last "
                        "dimension, got [3, 5]");
  EXPECT_ERROR_CONTAINS(cell->forward(x[0], std::make_tuple(zeros({2, 6}), zeros({3, 6}))),
                        "LSTMCell: expected h of shape [3, 6] (N, hidden_size), got [2, 6]");
  EXPECT_ERROR_CONTAINS(nn::GRUCell(4, 6)->forward(x[0][0], zeros({1, 6})),
                        "GRUCell: expected hx of shape [6] (hidden_size) for unbatched input, "
                        "got [1, 6]");
}

}  // namespace
}  // namespace minidl
