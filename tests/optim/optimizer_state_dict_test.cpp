// Optimizer state: state_dict() / load_state_dict() round trips exactly and a reloaded optimizer
// continues bit for bit; the flat form (named tensors + JSON scalars) round trips, also through
// a safetensors file; and loading refuses state that does not fit, changing nothing.
#include "minidl/optim/optimizer_state_dict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/safetensors.h"
#include "minidl/optim/scalar_map.h"
#include "minidl/optim/sgd.h"
#include "test_util.h"

namespace minidl::optim {
namespace {

Tensor parameter(const std::vector<double>& values, DType dtype = kFloat32) {
  Tensor p = from_host(values.data(), {static_cast<int64_t>(values.size())}, kFloat64).to(dtype);
  return p.requires_grad_(true);
}

// Deterministic, step- and parameter-dependent gradients.
void set_gradients(std::vector<Tensor> params, int step) {  // handles: set_grad is non-const
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<double> grad(static_cast<size_t>(params[i].numel()));
    for (size_t k = 0; k < grad.size(); ++k)
      grad[k] = 0.25 * static_cast<double>(step + 1) - 0.5 * static_cast<double>(k) +
                0.125 * static_cast<double>(i);
    params[i].set_grad(from_host(grad.data(), params[i].sizes(), kFloat64).to(params[i].dtype()));
  }
}

std::vector<Tensor> copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> result;
  for (const Tensor& p : params) result.push_back(p.detach().clone().requires_grad_(true));
  return result;
}

// Two groups (decayed weights, undecayed biases), Nesterov momentum.
std::vector<OptimizerParamGroup> groups_of(const std::vector<Tensor>& params) {
  return {OptimizerParamGroup({params[0], params[1]}),
          OptimizerParamGroup({params[2]}, SGDOptions(0.05).momentum(0.8).weight_decay(0))};
}
const SGDOptions kDefaults = SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-3);

void expect_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(to_vector<double>(a), to_vector<double>(b));
}

void expect_identical(const OptimizerStateDict& a, const OptimizerStateDict& b) {
  ASSERT_EQ(a.param_groups.size(), b.param_groups.size());
  for (size_t g = 0; g < a.param_groups.size(); ++g) {
    EXPECT_EQ(a.param_groups[g].options, b.param_groups[g].options);
    EXPECT_EQ(a.param_groups[g].params, b.param_groups[g].params);
  }
  ASSERT_EQ(a.state.size(), b.state.size());
  for (const auto& [position, state] : a.state) {
    ASSERT_EQ(b.state.count(position), 1u) << "position " << position;
    const ParamState& other = b.state.at(position);
    ASSERT_EQ(state.size(), other.size());
    for (const auto& [key, tensor] : state) expect_identical(tensor, other.at(key));
  }
}

TEST(OptimizerStateDict, HasPyTorchsShape) {
  std::vector<Tensor> params = {parameter({1, 2}), parameter({3}), parameter({4, 5, 6})};
  SGD optimizer(groups_of(params), kDefaults);
  set_gradients({params[0], params[2]}, 0);  // params[1] gets no gradient, so no state
  optimizer.step();
  const OptimizerStateDict state = optimizer.state_dict();

  ASSERT_EQ(state.param_groups.size(), 2u);
  EXPECT_EQ(state.param_groups[0].params, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(state.param_groups[1].params, (std::vector<int64_t>{2}));
  const ScalarMap expected_group0 = {
      {"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0}, {"weight_decay", 1e-3}, {"nesterov", 1}};
  EXPECT_EQ(state.param_groups[0].options, expected_group0);
  EXPECT_EQ(state.param_groups[1].options.at("lr"), 0.05);
  EXPECT_EQ(state.param_groups[1].options.at("nesterov"), 0);

  ASSERT_EQ(state.state.size(), 2u);
  expect_identical(state.state.at(0).at("momentum_buffer"),
                   optimizer.state(params[0])->at("momentum_buffer"));
  expect_identical(state.state.at(2).at("momentum_buffer"),
                   optimizer.state(params[2])->at("momentum_buffer"));
  // A snapshot: stepping again does not change what was returned.
  const std::vector<double> saved = to_vector<double>(state.state.at(0).at("momentum_buffer"));
  set_gradients(params, 1);
  optimizer.step();
  EXPECT_EQ(to_vector<double>(state.state.at(0).at("momentum_buffer")), saved);
}

TEST(OptimizerStateDict, ReloadedOptimizerContinuesBitForBit) {
  std::vector<Tensor> params = {parameter({1, 2}), parameter({3}), parameter({4, 5, 6})};
  SGD optimizer(groups_of(params), kDefaults);
  for (int step = 0; step < 3; ++step) {
    set_gradients(params, step);
    optimizer.step();
  }
  // A second optimizer over copies of the parameters, with a different lr, takes the state.
  std::vector<Tensor> resumed_params = copies(params);
  SGD resumed(groups_of(resumed_params), SGDOptions(123));
  resumed.load_state_dict(optimizer.state_dict());
  expect_identical(resumed.state_dict(), optimizer.state_dict());

  for (int step = 3; step < 6; ++step) {
    set_gradients(params, step);
    set_gradients(resumed_params, step);
    optimizer.step();
    resumed.step();
  }
  for (size_t i = 0; i < params.size(); ++i) expect_identical(resumed_params[i], params[i]);
}

TEST(OptimizerStateDict, StateIsCastToTheParameterDtype) {
  Tensor p = parameter({1, 2}, kFloat32);
  SGD optimizer({p}, SGDOptions(0.1).momentum(0.9));
  OptimizerStateDict state = optimizer.state_dict();
  const std::vector<double> buffer_values = {0.5, -0.25};
  state.state[0]["momentum_buffer"] = from_host(buffer_values.data(), {2}, kFloat64);
  optimizer.load_state_dict(state);
  const Tensor& buffer = optimizer.state(p)->at("momentum_buffer");
  EXPECT_EQ(buffer.dtype(), kFloat32);
  EXPECT_EQ(to_vector<double>(buffer), (std::vector<double>{0.5, -0.25}));
}

TEST(OptimizerStateDict, LoadRefusesStateThatDoesNotFitAndChangesNothing) {
  std::vector<Tensor> params = {parameter({1, 2}), parameter({3}), parameter({4, 5, 6})};
  SGD optimizer(groups_of(params), kDefaults);
  set_gradients(params, 0);
  optimizer.step();
  const OptimizerStateDict good = optimizer.state_dict();

  OptimizerStateDict fewer_groups = good;
  fewer_groups.param_groups.pop_back();
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(fewer_groups),
                        "SGD load_state_dict: the state has 1 param groups, this optimizer has 2");

  OptimizerStateDict fewer_params = good;
  fewer_params.param_groups[0].params.pop_back();
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(fewer_params),
                        "param group 0 of the state holds 1 parameters, this optimizer's holds 2");

  OptimizerStateDict wrong_shape = good;
  wrong_shape.state[2]["momentum_buffer"] = zeros({2});
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(wrong_shape),
                        "state.2.momentum_buffer: expected a floating-point momentum buffer of "
                        "shape [3] (the parameter's), got float32 of shape [2]");

  OptimizerStateDict unknown_key = good;
  unknown_key.state[0]["exp_avg"] = zeros({2});
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(unknown_key),
                        "unexpected state 'exp_avg'; SGD keeps only 'momentum_buffer'");

  OptimizerStateDict stray_position = good;
  stray_position.state[7]["momentum_buffer"] = zeros({2});
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(stray_position),
                        "entry for parameter position 7, which no param group lists");

  OptimizerStateDict bad_option = good;
  bad_option.param_groups[1].options.erase("momentum");
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(bad_option),
                        "SGD load_state_dict: param group 1: missing 'momentum'");
  bad_option = good;
  bad_option.param_groups[1].options["betas"] = 0.9;
  EXPECT_ERROR_CONTAINS(optimizer.load_state_dict(bad_option), "unexpected 'betas'");
  expect_identical(optimizer.state_dict(), good);
}

TEST(OptimizerStateDict, LoadedOptionValuesAreCheckedByTheNextStep) {
  // A OneCycleLR run to its end leaves lr slightly below zero (as PyTorch's does): such a
  // checkpoint loads, and the next step refuses to run before changing anything.
  Tensor p = parameter({1, 2});
  SGD optimizer({p}, SGDOptions(0.1).momentum(0.9));
  OptimizerStateDict state = optimizer.state_dict();
  state.param_groups[0].options["lr"] = -1e-5;
  optimizer.load_state_dict(state);
  EXPECT_EQ(optimizer.param_groups()[0].options().get_lr(), -1e-5);
  p.set_grad(zeros({2}));
  EXPECT_ERROR_CONTAINS(optimizer.step(), "SGD step: param group 0: invalid learning rate -1e-05");
  EXPECT_EQ(to_vector<double>(p), (std::vector<double>{1, 2}));
  EXPECT_EQ(optimizer.state(p), nullptr);

  state.param_groups[0].options["lr"] = 0.1;
  state.param_groups[0].options["nesterov"] = 1;
  state.param_groups[0].options["dampening"] = 0.5;
  optimizer.load_state_dict(state);
  EXPECT_ERROR_CONTAINS(optimizer.step(),
                        "Nesterov momentum requires a momentum > 0 and zero "
                        "dampening, got momentum 0.9 and dampening 0.5");
}

TEST(OptimizerStateDict, FlatFormRoundTrips) {
  std::vector<Tensor> params = {parameter({1, 2}), parameter({3}), parameter({4, 5, 6})};
  SGD optimizer(groups_of(params), kDefaults);
  set_gradients(params, 0);
  optimizer.step();
  const OptimizerStateDict state = optimizer.state_dict();

  const NamedTensorList tensors = state.tensors("optimizer.");
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].first, "optimizer.state.0.momentum_buffer");
  EXPECT_EQ(tensors[2].first, "optimizer.state.2.momentum_buffer");
  const ScalarMap scalars = state.scalars();
  EXPECT_EQ(scalars.at("param_groups.0.lr"), 0.1);
  EXPECT_EQ(scalars.at("param_groups.0.num_params"), 2);
  EXPECT_EQ(scalars.at("param_groups.1.num_params"), 1);

  // Other tensors in the same list (a model's weights) are ignored.
  NamedTensorList file_tensors = {{"fc.weight", zeros({2, 2})}};
  file_tensors.insert(file_tensors.end(), tensors.begin(), tensors.end());
  expect_identical(OptimizerStateDict::from_flat(file_tensors, scalars, "optimizer."), state);
}

TEST(OptimizerStateDict, FlatFormRejectsMalformedNames) {
  const ScalarMap scalars = {{"param_groups.0.lr", 0.1}, {"param_groups.0.num_params", 1}};
  EXPECT_ERROR_CONTAINS(
      OptimizerStateDict::from_flat({{"state.x.momentum_buffer", zeros({1})}}, scalars),
      "unexpected tensor 'state.x.momentum_buffer'");
  EXPECT_ERROR_CONTAINS(
      OptimizerStateDict::from_flat({{"state.1.momentum_buffer", zeros({1})}}, scalars),
      "is state of parameter 1, but the param groups hold only 1 parameters");
  EXPECT_ERROR_CONTAINS(OptimizerStateDict::from_flat({}, {{"lr", 0.1}}), "unexpected scalar 'lr'");
  EXPECT_ERROR_CONTAINS(OptimizerStateDict::from_flat({}, {{"param_groups.1.lr", 0.1}}),
                        "param group 0 is missing");
  EXPECT_ERROR_CONTAINS(OptimizerStateDict::from_flat({}, {{"param_groups.0.lr", 0.1}}),
                        "has no 'param_groups.0.num_params'");
}

TEST(OptimizerStateDict, SurvivesASafetensorsCheckpointExactly) {
  std::vector<Tensor> params = {parameter({1, 2}), parameter({3}), parameter({4, 5, 6})};
  // Options that print long in decimal, to check the JSON round trip is exact.
  SGD optimizer(groups_of(params), SGDOptions(1.0 / 3).momentum(0.9).weight_decay(5e-4));
  set_gradients(params, 0);
  optimizer.step();
  const OptimizerStateDict state = optimizer.state_dict();

  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "optimizer_state_test.safetensors";
  serialize::NamedTensorList tensors = {{"model.weight", params[0]}};
  for (const auto& entry : state.tensors("optimizer.")) tensors.push_back(entry);
  serialize::write_safetensors(path, tensors, {{"optimizer", to_json(state.scalars())}});

  const serialize::SafetensorsContents file = serialize::read_safetensors(path);
  const OptimizerStateDict loaded = OptimizerStateDict::from_flat(
      file.tensors, scalar_map_from_json(file.metadata.at("optimizer"), "optimizer metadata"),
      "optimizer.");
  expect_identical(loaded, state);
  std::filesystem::remove(path);
}

TEST(ScalarMap, JsonRoundTripsEveryDoubleExactly) {
  const ScalarMap scalars = {{"third", 1.0 / 3},
                             {"tiny", std::numeric_limits<double>::denorm_min()},
                             {"huge", std::numeric_limits<double>::max()},
                             {"negative_zero", -0.0},
                             {"lr", 0.1},
                             {"epoch", 12345678901234.0}};
  const ScalarMap back = scalar_map_from_json(to_json(scalars), "test");
  ASSERT_EQ(back.size(), scalars.size());
  for (const auto& [key, value] : scalars) {
    EXPECT_EQ(back.at(key), value) << key;
    EXPECT_EQ(std::signbit(back.at(key)), std::signbit(value)) << key;
  }
  EXPECT_ERROR_CONTAINS(to_json({{"bad", std::numeric_limits<double>::quiet_NaN()}}),
                        "scalar 'bad' is nan; expected a finite number");
  EXPECT_ERROR_CONTAINS(scalar_map_from_json("[1, 2]", "scheduler state"),
                        "scheduler state: expected a JSON object of numbers, found array");
  EXPECT_ERROR_CONTAINS(scalar_map_from_json("{\"lr\": \"0.1\"}", "scheduler state"),
                        "expected 'lr' to be a number, found \"0.1\"");
  EXPECT_ERROR_CONTAINS(scalar_map_from_json("{\"lr\": ", "scheduler state"), "not valid JSON");
}

}  // namespace
}  // namespace minidl::optim
