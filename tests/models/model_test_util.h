#pragma once
// Helpers shared by the tests of the models.
#include <cstdint>

#include "minidl/core/tensor.h"
#include "minidl/nn/nn.h"

namespace minidl::testing {

// How many numbers the module's parameters hold in all.
inline int64_t parameter_count(const nn::Module& module) {
  int64_t count = 0;
  for (const Tensor& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace minidl::testing
