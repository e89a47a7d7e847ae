#pragma once
// Options of the loss modules and their functional forms.
#include <cstdint>

#include "minidl/core/arg.h"
#include "minidl/ops/loss.h"

namespace minidl::nn {

struct CrossEntropyLossOptions {
  // How per-sample losses combine: Reduction::Mean (the default), Sum or None.
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
  // In [0, 1): the target becomes (1 - s) * one_hot + s / C, as PyTorch's label_smoothing.
  MINIDL_ARG(double, label_smoothing) = 0.0;
  // Samples whose target is this class index add nothing (padding tokens, masked positions).
  MINIDL_ARG(int64_t, ignore_index) = -100;
};

struct MSELossOptions {
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
};

using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using MSELossFuncOptions = MSELossOptions;

}  // namespace minidl::nn
