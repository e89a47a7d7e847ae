#pragma once
// Running minidl's optimizers against the numbers tools/reference/make_optimizer_reference.py
// prints from PyTorch (tests/optim/adam_test.cpp, rmsprop_test.cpp): the same two parameters and
// gradients, built from the script's formulas, and the comparison with its tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/optim/optimizer.h"

namespace minidl::optim::reference {

inline constexpr int kReferenceSteps = 5;

struct ReferenceState {
  const char* key;
  int group;
  std::vector<double> values;
};

struct ReferenceRun {
  const char* name;
  DType dtype;
  std::vector<std::vector<double>> params;  // after each step: group 0's 6 elements, group 1's 4
  std::vector<ReferenceState> state;        // after the last step
};

// The script's initial_values and gradient_values: dyadic fractions, exact in float32.
inline std::vector<double> initial_values(int group, int64_t numel) {
  std::vector<double> values;
  for (int64_t i = 0; i < numel; ++i)
    values.push_back(static_cast<double>((i * 5 + group * 3) % 9 - 4) / 8);
  return values;
}

inline std::vector<double> gradient_values(int group, int64_t numel, int step) {
  std::vector<double> values;
  for (int64_t i = 0; i < numel; ++i)
    values.push_back(static_cast<double>((i * 7 + step * 3 + group * 5) % 11 - 5) / 16);
  return values;
}

// Group 0's [2, 3] parameter and group 1's [4].
inline std::vector<Tensor> make_params(DType dtype) {
  std::vector<Tensor> params;
  const std::vector<Shape> shapes = {{2, 3}, {4}};
  for (int g = 0; g < 2; ++g) {
    const std::vector<double> values = initial_values(g, shape_numel(shapes[g]));
    params.push_back(from_host(values.data(), shapes[g], kFloat64).to(dtype).requires_grad_(true));
  }
  return params;
}

inline void set_gradients(std::vector<Tensor>& params, int step) {
  for (int g = 0; g < 2; ++g) {
    Tensor& p = params[static_cast<size_t>(g)];
    const std::vector<double> values = gradient_values(g, p.numel(), step);
    p.set_grad(from_host(values.data(), p.sizes(), kFloat64).to(p.dtype()).to(p.device()));
  }
}

inline std::vector<double> values_of(const Tensor& tensor) {
  const Tensor flat = tensor.to(kCPU).to(kFloat64).contiguous();
  const double* data = flat.data_ptr<double>();
  return std::vector<double>(data, data + flat.numel());
}

inline std::vector<double> values_of(const std::vector<Tensor>& tensors) {
  std::vector<double> all;
  for (const Tensor& t : tensors) {
    const std::vector<double> values = values_of(t);
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

// The tolerances, relative to the largest magnitude among the compared values (a tensor's,
// or a step's parameters), since some elements are sums that cancel to far below their terms
// (an exp_avg or grad_avg near zero), where a difference in the last bit of a term is many units
// in the last place of the result. PyTorch's CPU kernels are built for AVX2 with FMA, so some of
// its products and sums round once where minidl (baseline x86-64, no fused multiply-add) rounds
// twice: the two differ in the last bit now and then, and 5 steps compound it. Measured against
// PyTorch 2.15 on these suites: 85% of the elements agree exactly in both dtypes, the rest
// within one unit in the last place of the largest value in float32, and within 4e-16 of it
// in float64.
// Allowed: float32 kFloat32Ulps units in the last place of the largest value (FLT_EPSILON is
// the unit at 1), float64 1e-12 of it.
inline constexpr double kFloat32Ulps = 8;

inline ::testing::AssertionResult matches_reference(const std::vector<double>& actual,
                                                    const std::vector<double>& expected,
                                                    DType dtype) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << actual.size() << " values, expected " << expected.size();
  double scale = 0;
  for (double value : expected) scale = std::max(scale, std::abs(value));
  const double allowed = dtype == kFloat32
                             ? kFloat32Ulps * std::numeric_limits<float>::epsilon() * scale
                             : 1e-12 * scale;
  for (size_t i = 0; i < actual.size(); ++i)
    if (!(std::abs(actual[i] - expected[i]) <= allowed))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " but PyTorch's is " << expected[i]
             << ", a difference of " << std::abs(actual[i] - expected[i]) << " where " << allowed
             << " is allowed";
  return ::testing::AssertionSuccess();
}

// The reference runs' two groups: params[0] with the optimizer's defaults, params[1] with
// `group1`.
inline std::vector<OptimizerParamGroup> two_groups(const std::vector<Tensor>& params,
                                                   const OptimizerOptions& group1) {
  return {OptimizerParamGroup({params[0]}), OptimizerParamGroup({params[1]}, group1)};
}

// Steps first..last (1-based) of a reference run: that step's gradients, then a step.
inline void run_steps(Optimizer& optimizer, std::vector<Tensor>& params, int first, int last) {
  for (int step = first; step <= last; ++step) {
    set_gradients(params, step);
    optimizer.step();
  }
}

// Runs `optimizer` (over `params`, from make_params) for the reference's steps and
// compares the parameters after each step and every state tensor after the last.
inline void expect_run(const ReferenceRun& run, Optimizer& optimizer, std::vector<Tensor>& params) {
  for (int step = 1; step <= kReferenceSteps; ++step) {
    SCOPED_TRACE("after step " + std::to_string(step));
    set_gradients(params, step);
    optimizer.step();
    EXPECT_TRUE(
        matches_reference(values_of(params), run.params[static_cast<size_t>(step - 1)], run.dtype));
  }
  size_t entries = 0;
  for (size_t g = 0; g < params.size(); ++g)
    if (const ParamState* state = optimizer.state(params[g])) entries += state->size();
  EXPECT_EQ(entries, run.state.size()) << "state tensors kept";
  for (const ReferenceState& expected : run.state) {
    SCOPED_TRACE(std::string("state ") + expected.key + " of group " +
                 std::to_string(expected.group));
    const ParamState* state = optimizer.state(params[static_cast<size_t>(expected.group)]);
    ASSERT_NE(state, nullptr);
    ASSERT_EQ(state->count(expected.key), 1u);
    EXPECT_TRUE(matches_reference(values_of(state->at(expected.key)), expected.values, run.dtype));
  }
}

}  // namespace minidl::optim::reference
