#pragma once
// Written by tools/reference/make_autograd_reference.py with PyTorch 2.15.0+cu132; do not edit.
#include <vector>

namespace minidl::autograd_reference {

// grad([y1, y2], [x, h, w], [None, g2]) of the script's first case.
inline const std::vector<double> kTwoOutputsGradX{2.364832468711865, -0.6452064041547911,
                                                  0.7625284136829602};
inline const std::vector<double> kTwoOutputsGradH{1.2942883102595535, 0.1748997397207998,
                                                  -0.8427293413197654};
inline const std::vector<double> kTwoOutputsGradW{0.6471441551297767, -0.20987968766495976,
                                                  -1.6854586826395308};
// grad(loss, [x, w1]) of the script's MLP.
inline const std::vector<double> kMlpGradX{0.12368261578121015,  -0.027284396738577042,
                                           0.022923372978110274, 0.1240054139111793,
                                           -0.06597376660566148, 0.22112258268712529};
inline const std::vector<double> kMlpGradW1{
    -0.02029162606738619, 0.04537409139147675, 0.015587559071580865,  0.012938730296727666,
    -0.03875399701544963, 0.09122438819701274, -0.012553704827248144, 0.03604089379550566,
    -0.07244303120520242, -0.0785732232548325, 0.1693518978343508,    0.12571816577119996};

}  // namespace minidl::autograd_reference
