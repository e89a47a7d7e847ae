#pragma once
// Scaled dot-product attention, as torch.nn.functional.scaled_dot_product_attention:
//
//   out = dropout(softmax(query @ key^T * scale + mask), dropout_p) @ value
//
// computed blocked, FlashAttention-style (Note [Blocked attention] in ops/attention_math.h):
// neither direction ever holds a [T, S] matrix per head.
#include <optional>

#include "minidl/core/tensor.h"

namespace minidl {

// Shapes: query [..., T, D], key [..., S, D], value [..., S, Dv] with the same leading (batch)
// dims, at least one of them ([B, T, D] or [B, H, T, D]); out [..., T, Dv] in the query's dtype,
// contiguous. dtypes float32, float64 (CPU), float16 and bfloat16 (accumulated in float32), all
// three the same, on one device.
//
// attn_mask (optional) is broadcastable to [..., T, S]: boolean (true = the key takes part, as
// PyTorch) or additive, in the query's dtype or float32 (added to the scaled scores; -inf
// masks). No
// gradient flows to an additive mask: one that requires grad is an error.
// is_causal masks key j for query i when j > i (the top-left aligned lower triangle, as
// PyTorch, also when T != S); it and attn_mask together are an error, as in PyTorch.
// A query row whose every key is masked gives 0 (and zero gradients), as PyTorch 2.15 gives on
// the CPU (its flash kernel; the math path would give NaN).
// dropout_p in [0, 1] drops attention probabilities, scaling the kept ones by 1 / (1 - p) (1
// drops all: zeros, as PyTorch); the
// keep decision of (b, h, i, j) comes from the default generator's Philox counter
// offset + ((b * H + h) * T + i) * S + j, so CPU and CUDA drop the same entries for the same
// seed, and backward regenerates the mask instead of storing it. Pass 0 in evaluation.
// scale defaults to 1 / sqrt(D).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

}  // namespace minidl
