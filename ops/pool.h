#pragma once
// 2-D pooling over the last two dims of a [N, C, H, W] (or unbatched [C, H, W]) floating-point
// tensor, as torch.nn.functional. Output sizes use floor mode:
//   out = (in + 2 * padding - kernel) / stride + 1.
// The output keeps the input's memory format (channels-last in, channels-last out). Any strides
// are accepted; nothing is copied to make the input contiguous.
#include <optional>

#include "minidl/core/tensor.h"

namespace minidl {

// Maximum over each window; padding never wins. `stride` defaults to `kernel` (leave it as
// std::nullopt), as PyTorch's stride=None. Padding may be at most half the kernel.
// Backward routes each gradient to the window's maximum (the first one on ties), from argmax
// positions kept by the forward; the input itself is not kept.
// A pair of strides is written Size2{h, w}: max_pool2d(x, 3, Size2{2, 1}).
Tensor max_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = 0);

// Mean over each window. count_include_pad: padded positions count in the divisor (PyTorch's
// default); otherwise only real input positions do.
Tensor avg_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = 0, bool count_include_pad = true);

// Mean over windows chosen so the output has `output_size`: output (i, j) averages input rows
// [floor(i * H / out_h), ceil((i + 1) * H / out_h)) and likewise columns, as PyTorch. Any
// output size >= 1 works (larger than the input too); output_size 1 is global average pooling.
Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);

}  // namespace minidl
