#pragma once
// The loss modules, without parameters, as PyTorch's torch/nn/modules/loss.py keeps them
// together (their options are in nn/options/loss.h):
//
//   CrossEntropyLoss  softmax cross-entropy of logits [N, C] against int64 class indices [N];
//                     by default the mean over the batch
//   MSELoss           the squared difference of input and target, element-wise; by default
//                     the mean over all elements
//   NLLLoss           the negative log-probability of the target class, from log-probabilities
//                     [N, C] (after log_softmax), with per-class weights and ignore_index
//   BCEWithLogitsLoss binary cross-entropy of logits against targets in [0, 1], element-wise,
//                     with per-element weight and positive-class pos_weight; numerically stable
//   BCELoss           binary cross-entropy of probabilities (after sigmoid); prefer
//                     BCEWithLogitsLoss, which is stable and safe under autocast
//   L1Loss            the absolute difference of input and target, element-wise; by default
//                     the mean over all elements
//   SmoothL1Loss      quadratic below beta, then linear (L1 at beta = 0)
//   HuberLoss         quadratic below delta, then delta-times linear (delta * SmoothL1Loss)
//   KLDivLoss         the KL divergence of log-probabilities from a target distribution
//
// A loss with weights keeps them as buffers ("weight", "pos_weight", as PyTorch's state_dict),
// so module->to(device) moves them with the module.
//
// Each is its torch::nn namesake; forward calls the nn::functional form.
#include <iosfwd>

#include "minidl/core/tensor.h"
#include "minidl/nn/module.h"
#include "minidl/nn/module_holder.h"
#include "minidl/nn/options/loss.h"

namespace minidl::nn {

class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& logits, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  CrossEntropyLossOptions options;
};
MINIDL_MODULE(CrossEntropyLoss);

class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  MSELossOptions options;
};
MINIDL_MODULE(MSELoss);

class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& log_probs, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  NLLLossOptions options;
};
MINIDL_MODULE(NLLLoss);

class BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  BCEWithLogitsLossOptions options;
};
MINIDL_MODULE(BCEWithLogitsLoss);

class BCELossImpl : public Module {
 public:
  explicit BCELossImpl(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  BCELossOptions options;
};
MINIDL_MODULE(BCELoss);

class L1LossImpl : public Module {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  L1LossOptions options;
};
MINIDL_MODULE(L1Loss);

class SmoothL1LossImpl : public Module {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  SmoothL1LossOptions options;
};
MINIDL_MODULE(SmoothL1Loss);

class HuberLossImpl : public Module {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  HuberLossOptions options;
};
MINIDL_MODULE(HuberLoss);

class KLDivLossImpl : public Module {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& out) const override;

  KLDivLossOptions options;
};
MINIDL_MODULE(KLDivLoss);

}  // namespace minidl::nn
