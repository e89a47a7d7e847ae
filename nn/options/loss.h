#pragma once
// Options of the loss modules and their functional forms.
#include <cstdint>

#include "minidl/core/arg.h"
#include "minidl/core/tensor.h"
#include "minidl/ops/loss.h"
#include "minidl/ops/pointwise_loss.h"

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

struct BCEWithLogitsLossOptions {
  // Multiplies each element's loss; broadcasts to the input's shape. Undefined: 1.
  MINIDL_ARG(Tensor, weight);
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
  // Multiplies the positive (target 1) term; broadcasts with the target, so [C] weighs the
  // classes of the last dim (num_negative / num_positive balances a class). Undefined: 1.
  MINIDL_ARG(Tensor, pos_weight);
};

struct BCELossOptions {
  // Multiplies each element's loss; broadcasts to the input's shape. Undefined: 1.
  MINIDL_ARG(Tensor, weight);
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
};

struct SmoothL1LossOptions {
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
  // Where the loss turns from quadratic to linear; 0 gives the L1 loss.
  MINIDL_ARG(double, beta) = 1.0;
};

struct L1LossOptions {
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
};

struct HuberLossOptions {
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
  // Where the loss turns from quadratic to linear; positive.
  MINIDL_ARG(double, delta) = 1.0;
};

struct KLDivLossOptions {
  // KLDivReduction::BatchMean gives the KL divergence itself; Mean (PyTorch's default) divides
  // by every element.
  MINIDL_ARG(KLDivReduction, reduction) = KLDivReduction::Mean;
  // Whether the target is given as log-probabilities too.
  MINIDL_ARG(bool, log_target) = false;
};

struct NLLLossOptions {
  // One weight per class, [C]: a sample's loss is multiplied by its target's weight, and a mean
  // divides by the sum of the counted samples' weights. Undefined: 1.
  MINIDL_ARG(Tensor, weight);
  // Samples whose target is this class index add nothing.
  MINIDL_ARG(int64_t, ignore_index) = -100;
  MINIDL_ARG(Reduction, reduction) = Reduction::Mean;
};

using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using L1LossFuncOptions = L1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using KLDivFuncOptions = KLDivLossOptions;
using NLLLossFuncOptions = NLLLossOptions;

namespace functional {
// LibTorch spells them F::BinaryCrossEntropyWithLogitsFuncOptions and so on too.
using nn::BinaryCrossEntropyFuncOptions;
using nn::BinaryCrossEntropyWithLogitsFuncOptions;
using nn::HuberLossFuncOptions;
using nn::KLDivFuncOptions;
using nn::L1LossFuncOptions;
using nn::NLLLossFuncOptions;
using nn::SmoothL1LossFuncOptions;
}  // namespace functional

}  // namespace minidl::nn
