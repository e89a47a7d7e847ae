#pragma once
// Every parameter of a module in one float64 vector on the CPU, in registration order, so that
// the data-parallel tests can compare whole models across runs and ranks (float64 holds every
// float32, float16 and bfloat16 value exactly, so the comparison loses nothing).
#include <cstdint>
#include <vector>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"

namespace minidl::testing {

inline Tensor flat_parameters(const nn::Module& module) {
  std::vector<double> values;
  for (const Tensor& parameter : module.parameters()) {
    const std::vector<double> v = to_vector<double>(parameter);
    values.insert(values.end(), v.begin(), v.end());
  }
  return from_host(values.data(), {static_cast<int64_t>(values.size())}, kFloat64);
}

}  // namespace minidl::testing
