#pragma once
// Written by tools/reference/make_gpt_reference.py with PyTorch 2.15.0+cu132; do not edit.
// PyTorch's numbers for train_gpt's exactness test: the default GPT (vocab 256, block
// 128, 4 layers, 4 heads, 128 channels, no bias) with formula weights and batches, 20
// float32 AdamW steps with clipping and nanoGPT's schedule, on the CPU (one thread).
// The formulas and the steps are in the script's docstring.
#include <cstdint>

namespace minidl::testing {

inline constexpr int kGptReferenceSteps = 20;

// clang-format off
// Step s's loss, before its update.
inline constexpr double kGptReferenceLosses[kGptReferenceSteps] = {
    5.5648245811462402,
    5.5580301284790039,
    5.5487556457519531,
    5.5371856689453125,
    5.5197153091430664,
    5.4995989799499512,
    5.4780764579772949,
    5.4502067565917969,
    5.4258198738098145,
    5.397066593170166,
    5.3678998947143555,
    5.334080696105957,
    5.2998275756835938,
    5.2599477767944336,
    5.2196841239929199,
    5.1776270866394043,
    5.1323146820068359,
    5.0885810852050781,
    5.0385394096374512,
    4.9893865585327148,
};
// The learning rate of step s's update (get_lr(s), max_steps 2000).
inline constexpr double kGptReferenceLearningRates[kGptReferenceSteps] = {
    9.9009900990099013e-06,
    1.9801980198019803e-05,
    2.9702970297029702e-05,
    3.9603960396039605e-05,
    4.9504950495049508e-05,
    5.9405940594059404e-05,
    6.9306930693069314e-05,
    7.9207920792079211e-05,
    8.910891089108912e-05,
    9.9009900990099017e-05,
    0.0001089108910891089,
    0.00011881188118811881,
    0.00012871287128712872,
    0.00013861386138613863,
    0.00014851485148514851,
    0.00015841584158415842,
    0.00016831683168316833,
    0.00017821782178217824,
    0.00018811881188118812,
    0.00019801980198019803,
};
// clang-format on

// The loss of the first batch with the formula weights, before any update.
inline constexpr double kGptReferenceFirstLoss = 5.5648245811462402;
// The L2 norm of all gradients of step 0, before and after clip_grad_norm_(1.0).
inline constexpr double kGptReferenceGradNormBeforeClip = 0.96142661571502686;
inline constexpr double kGptReferenceGradNormAfterClip = 0.96142674229099023;
// Every parameter once: the tied wte / lm_head weight counts once; wpe counts.
inline constexpr int64_t kGptReferenceParameterCount = 836736;
// The same without the position embeddings (wpe), as nanoGPT's get_num_params().
inline constexpr int64_t kGptReferenceNonEmbeddingParameterCount = 820352;

}  // namespace minidl::testing
